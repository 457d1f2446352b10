// Package functions is Sluice's function registry: WASM modules stored once
// in Postgres by SHA-256, numbered immutable versions of each function with
// their config (memory, timeout, env), and aliases that point at a version.
//
// A deploy creates the next version and moves the alias (live by default);
// deploying the same module and config again changes nothing. Rollback moves
// an alias back to where it pointed before its last move. Triggers follow an
// alias, so a deploy or rollback takes effect on the next batch.
//
// Everything is readable with SQL: the functions, function_versions,
// function_aliases and wasm_modules tables and the function_overview view.
package functions
