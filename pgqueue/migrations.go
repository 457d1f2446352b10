package pgqueue

import (
	"embed"
	"io/fs"

	"github.com/sluicehq/sluice/pgqueue/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations is the queue core's migration line. Apply it with
// migrate.Up(ctx, pool, schema, pgqueue.Migrations) or `sluice migrate`.
var Migrations = migrate.Line{Name: "pgqueue", FS: mustSub(migrationFiles, "migrations")}

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
