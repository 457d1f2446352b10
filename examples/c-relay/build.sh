#!/bin/sh
# Builds relay.wasm (or the path given as $1): a reactor module written
# against the C SDK, as examples/c-triage/build.sh (same toolchain).
# MODE=command builds a command instead.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
sdk="$here/../../sdk/c"
out=${1:-"$here/relay.wasm"}
cc=${CC:-clang}
flags="--target=wasm32-wasi -O2 -Wall -Wextra -Werror -I$sdk -Wl,--strip-all"
[ -n "${WASI_SYSROOT:-}" ] && flags="$flags --sysroot=$WASI_SYSROOT"
if [ "${MODE:-reactor}" = reactor ]; then
	flags="$flags -mexec-model=reactor -DSLUICE_REACTOR"
fi
# shellcheck disable=SC2086 # flags is a word list
"$cc" $flags -o "$out" "$here/relay.c" "$sdk/sluice.c"
