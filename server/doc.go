// Package server wires Sluice together and runs it: one Postgres pool, the
// queue core's listener and sweeper, the function registry, the WASM
// runtime, the trigger engine and the HTTP API, with a graceful lifecycle
// (Open, Start, Stop). It also applies app manifests (Apply), which is what
// `sluice deploy` and `sluice dev` do.
package server
