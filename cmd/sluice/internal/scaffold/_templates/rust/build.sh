#!/bin/sh
# Builds {{.Wasm}} (or the path given as $1): a command module (exports
# _start) for WASI preview 1. Needs cargo with the wasm32-wasi standard
# library: Debian/Ubuntu's (`apt-get install rustc cargo
# libstd-rust-dev-wasm32`, used through /usr/bin when it is there, so that
# a rustup toolchain earlier on PATH without that target is not picked),
# or rustup's (`rustup target add wasm32-wasip1`, then
# TARGET=wasm32-wasip1 CARGO=cargo ./build.sh).
set -eu
cd "$(dirname "$0")"
out=${1:-{{.Wasm}}}
target=${TARGET:-wasm32-wasi}
if [ -z "${CARGO:-}" ]; then
	if [ -d /usr/lib/rustlib/wasm32-wasi ] && [ -x /usr/bin/cargo ]; then
		CARGO=/usr/bin/cargo
		RUSTC=${RUSTC:-/usr/bin/rustc}
		export RUSTC
	else
		CARGO=cargo
	fi
fi
"$CARGO" build --quiet --offline --release --target "$target"
cp "target/$target/release/{{.Name}}.wasm" "$out"
echo "$out"
