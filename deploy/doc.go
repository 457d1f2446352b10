// Package deploy makes an account match an app manifest (sluice.yaml): it
// owns the steps of an apply — create or update the queues, declare the
// webhook hooks, deploy the functions (a new version only when module or
// config changed), put the triggers, and remove what the manifest owned
// and no longer declares — and the Target they run against.
//
// A Target is one account somewhere: DBTarget works on the database
// through the domain packages' Go APIs (pgqueue, functions, triggers and a
// HookStore), APITarget through the HTTP API with package client. Both
// make the same changes, so `sluice deploy` gives the same result with
// DATABASE_URL as through `sluice login`.
//
// The package never builds code: a function's module comes from a
// Modules source. ManifestModules reads the .wasm files a manifest names
// and hands `build:` packages to a Builder and build commands to a Runner
// that the caller supplies (the CLI passes internal/wasmbuild's), so
// nothing that serves requests can start a toolchain. Apply fetches every
// module before it changes anything: a failed build changes nothing.
package deploy
