// A copy of the Sluice Go SDK (package github.com/sluicehq/sluice/sdk),
// written by `sluice new`; go.mod above replaces the module with it.
module github.com/sluicehq/sluice

go 1.24
