package pgqueue

import (
	"embed"

	"github.com/sluicehq/sluice/pgqueue/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations is the queue core's migration line. Apply it with
// migrate.Up(ctx, pool, schema, pgqueue.Migrations) or `sluice migrate`.
var Migrations = migrate.NewLine("pgqueue", migrationFiles, "migrations")
