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
# asc's optimizer (binaryen) is itself WebAssembly: after "--", node runs
# it with V8's baseline compiler only, the same module built in half the
# CPU (BENCHMARKS.md, "AssemblyScript builds").
node_modules/.bin/asc assembly/index.ts --config asconfig.json --outFile "$out" -- --liftoff-only
echo "$out"
