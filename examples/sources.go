// Package examples holds the example functions, one a folder with its
// manifest, and the tests that build and run them. Its Go code is only
// Triage: the triage example's sources, which `sluice new` starts every
// project from.
package examples

import "embed"

// Triage are the sources of the triage function in each language that
// `sluice new` writes into a new project (renamed, and pointed at the
// project's copy of the SDK): go-triage/main.go, c-triage/triage.c,
// rust-triage's Cargo.toml and src/main.rs, and as-triage's
// assembly/index.ts, asconfig.json, package.json and package-lock.json.
// The one copy of each is the example's, which the examples' tests build
// and run.
//
//go:embed go-triage/main.go c-triage/triage.c rust-triage/Cargo.toml rust-triage/src/main.rs
//go:embed as-triage/assembly/index.ts as-triage/asconfig.json as-triage/package.json as-triage/package-lock.json
var Triage embed.FS
