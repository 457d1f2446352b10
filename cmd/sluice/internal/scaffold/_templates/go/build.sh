#!/bin/sh
# Builds {{.Wasm}} (or the path given as $1): a reactor module for WASI
# preview 1. `sluice deploy` builds the package itself (build: . in
# sluice.yaml); this script is for `sluice invoke`.
set -eu
cd "$(dirname "$0")"
out=${1:-{{.Wasm}}}
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o "$out" .
echo "$out"
