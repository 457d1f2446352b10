#!/bin/sh
# Builds {{.Wasm}} (or the path given as $1): a reactor module (exports
# _initialize, sluice_alloc, sluice_handle and memory) for WASI preview 1.
# Needs clang with the wasm32-wasi target, wasm-ld and wasi-libc: on
# Debian/Ubuntu `apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32`;
# elsewhere the wasi-sdk's clang (CC=/opt/wasi-sdk/bin/clang). Set
# WASI_SYSROOT when libc lives outside the compiler's default sysroot.
# MODE=command builds a command instead. sluice-sdk/sluice_host.c holds the
# wrappers of the HTTP and key-value host imports (#include "sluice_host.h");
# a function that calls none of them imports none.
set -eu
cd "$(dirname "$0")"
out=${1:-{{.Wasm}}}
cc=${CC:-clang}
flags="--target=wasm32-wasi -O2 -Wall -Wextra -Werror -Isluice-sdk -Wl,--strip-all"
[ -n "${WASI_SYSROOT:-}" ] && flags="$flags --sysroot=$WASI_SYSROOT"
if [ "${MODE:-reactor}" = reactor ]; then
	flags="$flags -mexec-model=reactor -DSLUICE_REACTOR"
fi
# shellcheck disable=SC2086 # flags is a word list
"$cc" $flags -o "$out" main.c sluice-sdk/sluice.c sluice-sdk/sluice_host.c
echo "$out"
