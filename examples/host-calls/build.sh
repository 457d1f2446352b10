#!/bin/sh
# Builds the host-calls function in one language: build.sh c|rust|as OUT.
# Each calls the v1.1 host imports (HTTP and key-value) through its SDK's
# wrappers; examples/hostcalls_test.go runs them. The toolchains are the
# triage examples' (scripts/toolchains c|rust|as).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
sdk="$here/../../sdk"
lang=$1
out=$2
case "$lang" in
c)
	cc=${CC:-clang}
	flags="--target=wasm32-wasi -O2 -Wall -Wextra -Werror -I$sdk/c -Wl,--strip-all -mexec-model=reactor -DSLUICE_REACTOR"
	[ -n "${WASI_SYSROOT:-}" ] && flags="$flags --sysroot=$WASI_SYSROOT"
	# shellcheck disable=SC2086 # flags is a word list
	"$cc" $flags -o "$out" "$here/host.c" "$sdk/c/sluice.c" "$sdk/c/sluice_host.c"
	;;
rust)
	cargo=${CARGO:-/usr/bin/cargo}
	RUSTC=${RUSTC:-/usr/bin/rustc}
	export RUSTC
	target_dir=${CARGO_TARGET_DIR:-"$here/rust/target"}
	"$cargo" build --quiet --offline --locked --release --target wasm32-wasi \
		--manifest-path "$here/rust/Cargo.toml" --target-dir "$target_dir"
	cp "$target_dir/wasm32-wasi/release/host-calls.wasm" "$out"
	;;
as)
	as="$here/../as-triage"
	[ -x "$as/node_modules/.bin/asc" ] || (cd "$as" && npm ci --no-audit --no-fund --silent)
	cd "$as"
	# asc's optimizer (binaryen) is itself WebAssembly: after "--", node runs
	# it with V8's baseline compiler only, the same module built in half the
	# CPU (BENCHMARKS.md, "AssemblyScript builds").
	node_modules/.bin/asc "$here/host.ts" --config asconfig.json --outFile "$out" -- --liftoff-only
	;;
*)
	echo "usage: build.sh c|rust|as OUT" >&2
	exit 2
	;;
esac
echo "$out"
