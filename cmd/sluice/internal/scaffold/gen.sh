#!/bin/sh
# Copies the guest SDKs that `sluice new` vendors into new projects from
# sdk/ into _sdk/ (run by go generate; TestEmbeddedSDKsMatch fails when
# they drift).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
sdk="$here/../../../../sdk"
rm -rf "$here/_sdk"
mkdir -p "$here/_sdk/go" "$here/_sdk/c" "$here/_sdk/rust/src" "$here/_sdk/assemblyscript"
for f in "$sdk"/*.go; do
	case "$f" in *_test.go) continue ;; esac
	cp "$f" "$here/_sdk/go/"
done
cp "$sdk/c/sluice.h" "$sdk/c/sluice.c" "$sdk/c/sluice_host.h" "$sdk/c/sluice_host.c" "$here/_sdk/c/"
cp "$sdk/rust/Cargo.toml" "$here/_sdk/rust/"
cp "$sdk/rust/src/"*.rs "$here/_sdk/rust/src/"
cp "$sdk/assemblyscript/assembly/index.ts" "$sdk/assemblyscript/assembly/host.ts" "$here/_sdk/assemblyscript/"
