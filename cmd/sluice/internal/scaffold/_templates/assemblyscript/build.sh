#!/bin/sh
# Builds {{.Wasm}} (or the path given as $1): a reactor module (exports
# _initialize, sluice_alloc, sluice_handle and memory) for WASI preview 1.
# Needs node and npm; the compiler and the WASI shim come from
# package-lock.json (npm ci, from the npm cache when it has them).
set -eu
cd "$(dirname "$0")"
out=${1:-{{.Wasm}}}
[ -x node_modules/.bin/asc ] || npm ci --prefer-offline --no-audit --no-fund --silent
# After "--", node flags for the compiler: asc's optimizer (binaryen) is
# itself WebAssembly, and V8's baseline compiler alone builds the same
# module in half the CPU and less time.
node_modules/.bin/asc assembly/index.ts --config asconfig.json --outFile "$out" -- --liftoff-only
echo "$out"
