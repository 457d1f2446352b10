package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/pgqueue/citus"
	"github.com/sluicehq/sluice/pgqueue/migrate"
	"github.com/sluicehq/sluice/server/migrations"
)

// runMigrate applies every pending migration to DATABASE_URL. It is
// idempotent and safe to run from several processes at once. With --citus
// it then distributes the queue tables and the invocation log on the Citus
// cluster DATABASE_URL names (its coordinator); see docs/scale-out.md.
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("migrate", stderr)
	schema := fs.String("schema", pgqueue.DefaultSchema, "schema to migrate")
	onCitus := fs.Bool("citus", false, "then distribute the queue tables and the invocation log on the Citus cluster whose coordinator DATABASE_URL names (idempotent)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sluice migrate [--schema sluice] [--citus]")
		fmt.Fprintln(stderr, "Applies the database migrations to the database named by DATABASE_URL.")
		fmt.Fprintln(stderr, "With --citus, DATABASE_URL is a Citus coordinator and the queue tables are then distributed (docs/scale-out.md).")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected argument %q", fs.Arg(0))
	}
	if err := migrate.ValidateSchema(*schema); err != nil {
		return usageErrorf("%v", err)
	}
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		return usageErrorf("DATABASE_URL is not set: set it to a Postgres URL, e.g. DATABASE_URL=postgres://user@localhost:5432/sluice")
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return fmt.Errorf("connect to DATABASE_URL: %w", err)
	}
	defer pool.Close()
	if err := migrate.Up(ctx, pool, *schema, migrations.All...); err != nil {
		return err
	}
	if *onCitus {
		if err := citus.Distribute(ctx, pool, *schema, migrations.All...); err != nil {
			return err
		}
	}
	versions, err := migrate.Current(ctx, pool, *schema)
	if err != nil {
		return err
	}
	lines := make([]string, 0, len(versions))
	for l := range versions {
		lines = append(lines, l)
	}
	sort.Strings(lines)
	fmt.Fprintf(stdout, "schema %s is up to date:", *schema)
	for _, l := range lines {
		fmt.Fprintf(stdout, " %s %d", l, versions[l])
	}
	if *onCitus {
		fmt.Fprint(stdout, "; queue tables and invocation log distributed on Citus")
	}
	fmt.Fprintln(stdout)
	return nil
}
