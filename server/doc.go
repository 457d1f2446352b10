// Package server wires Sluice together and runs it: one Postgres pool, the
// queue core's listener and sweeper, the function registry, the WASM
// runtime, the trigger engine and the HTTP API, with a graceful lifecycle
// (Open, Start, Stop). Apply makes an account match an app manifest on the
// server's database through package deploy, which is what `sluice dev` and
// `sluice deploy` with DATABASE_URL do.
package server
