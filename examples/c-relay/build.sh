#!/bin/sh
# Builds relay.wasm (or the path given as $1) with examples/c-triage's
# build (same toolchain and flags): a reactor, or with MODE=command a
# command.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
SRC="$here/relay.c" exec "$here/../c-triage/build.sh" "${1:-"$here/relay.wasm"}"
