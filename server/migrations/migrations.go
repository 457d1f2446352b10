// Package migrations holds the HTTP API's migration line (access keys and
// accounts' API state; for history's sake it also creates the hooks and
// webhook deliveries tables, which package triggers owns: see
// RATIONALE.md) and the list of every migration line of Sluice, so that
// the CLI can migrate a database or deploy to it without importing the
// server.
package migrations

import (
	"embed"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/kv"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/pgqueue/migrate"
	"github.com/sluicehq/sluice/triggers"
)

//go:embed *.sql
var files embed.FS

// API is the HTTP API's migration line, named "server"; it applies after
// the triggers' line.
var API = migrate.NewLine("server", files, ".")

// All are every migration line of Sluice, in the order they apply.
var All = []migrate.Line{pgqueue.Migrations, functions.Migrations, triggers.Migrations, kv.Migrations, API}
