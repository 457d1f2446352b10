#!/bin/sh
# Builds triage.wasm (or the path given as $1) from source: a reactor
# module (exports _initialize, sluice_alloc, sluice_handle and memory).
# Needs clang with the wasm32-wasi target, wasm-ld and wasi-libc: on
# Debian/Ubuntu `scripts/toolchains c` (clang lld wasi-libc
# libclang-rt-14-dev-wasm32); elsewhere the wasi-sdk's clang
# (CC=/opt/wasi-sdk/bin/clang). Set WASI_SYSROOT when libc lives outside
# the compiler's default sysroot. MODE=command builds a command instead;
# SRC=file.c builds another C function against the SDK (examples/c-relay).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
sdk="$here/../../sdk/c"
out=${1:-"$here/triage.wasm"}
cc=${CC:-clang}
flags="--target=wasm32-wasi -O2 -Wall -Wextra -Werror -I$sdk -Wl,--strip-all"
[ -n "${WASI_SYSROOT:-}" ] && flags="$flags --sysroot=$WASI_SYSROOT"
if [ "${MODE:-reactor}" = reactor ]; then
	flags="$flags -mexec-model=reactor -DSLUICE_REACTOR"
fi
# shellcheck disable=SC2086 # flags is a word list
"$cc" $flags -o "$out" "${SRC:-$here/triage.c}" "$sdk/sluice.c"
echo "$out"
