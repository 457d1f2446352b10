#!/bin/sh
# Builds triage.wasm (or the path given as $1) from source: a command
# module (exports _start). Needs a Rust toolchain with the wasm32-wasi
# standard library: on Debian/Ubuntu `scripts/toolchains rust` (rustc
# cargo libstd-rust-dev-wasm32, used through /usr/bin explicitly so that a
# rustup toolchain earlier on PATH without that target is not picked);
# elsewhere `rustup target add wasm32-wasi` and CARGO=cargo RUSTC=rustc.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-"$here/triage.wasm"}
cargo=${CARGO:-/usr/bin/cargo}
RUSTC=${RUSTC:-/usr/bin/rustc}
export RUSTC
target_dir=${CARGO_TARGET_DIR:-"$here/target"}
"$cargo" build --quiet --offline --locked --release --target wasm32-wasi \
	--manifest-path "$here/Cargo.toml" --target-dir "$target_dir"
cp "$target_dir/wasm32-wasi/release/rust-triage.wasm" "$out"
echo "$out"
