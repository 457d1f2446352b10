// Package citus distributes Sluice's queue tables on a Citus cluster.
//
// Apply the ordinary migrations first (migrate.Up, or `sluice migrate`),
// then call [Distribute] on the coordinator (or run `sluice migrate
// --citus`). The queue tables are distributed by queue_id, co-located, and
// the small tables become reference tables; distribute.sql lists which and
// why, and docs/scale-out.md says what works on Citus and what does not.
package citus

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/pgqueue/migrate"
)

//go:embed distribute.sql
var distributeSQL string

// ErrNotInstalled reports a database without the citus extension.
var ErrNotInstalled = errors.New("the citus extension is not installed in this database")

// Installed reports whether the database pool connects to has the citus
// extension.
func Installed(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	var ok bool
	if err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')").Scan(&ok); err != nil {
		return false, fmt.Errorf("citus: look for the citus extension: %w", err)
	}
	return ok, nil
}

// Distribute distributes the tables of schema, already migrated, on the
// Citus cluster whose coordinator pool connects to: the queue tables
// (distribute.sql), then those of each of lines that has a Citus step
// (migrate.Line.Citus, e.g. package triggers' invocation log), in order.
// It is idempotent: a table already distributed is left as it is. It fails
// with [ErrNotInstalled] when the database has no citus extension.
func Distribute(ctx context.Context, pool *pgxpool.Pool, schema string, lines ...migrate.Line) error {
	ok, err := Installed(ctx, pool)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("citus: distribute schema %s: %w: run CREATE EXTENSION citus on the coordinator and add the workers (see docs/scale-out.md), or migrate without --citus", schema, ErrNotInstalled)
	}
	// Its own connection, closed at the end: the settings and the lock
	// below are the session's, and no pooled connection keeps them.
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("citus: distribute schema %s: connect: %w", schema, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// A session lock (Citus creates shards over its own connections and
	// refuses some of that inside a transaction block) keeps two runs, for
	// this schema or another, from changing the database at once.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext('sluice.citus'))"); err != nil {
		return fmt.Errorf("citus: distribute schema %s: lock: %w", schema, err)
	}
	if _, err := conn.Exec(ctx, "SELECT set_config('search_path', $1, false)", pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("citus: distribute schema %s: set search_path: %w", schema, err)
	}
	if _, err := conn.Exec(ctx, distributeSQL); err != nil {
		return fmt.Errorf("citus: distribute schema %s: %w", schema, err)
	}
	for _, l := range lines {
		if l.Citus == "" {
			continue
		}
		if _, err := conn.Exec(ctx, l.Citus); err != nil {
			return fmt.Errorf("citus: distribute schema %s: the %s line's tables: %w", schema, l.Name, err)
		}
	}
	return nil
}
