#!/bin/sh
# Builds triage.wasm (or the path given as $1) from source: a reactor
# module (exports _initialize, sluice_alloc, sluice_handle and memory).
# Needs node and npm (Debian: `scripts/toolchains as` installs nodejs and
# npm, then runs `npm ci` here); the compiler and the WASI shim come from
# package-lock.json.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-"$here/triage.wasm"}
cd "$here"
[ -x node_modules/.bin/asc ] || npm ci --no-audit --no-fund --silent
node_modules/.bin/asc assembly/index.ts --config asconfig.json --outFile "$out"
echo "$out"
