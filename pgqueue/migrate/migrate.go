// Package migrate applies numbered, embedded SQL migrations to a Postgres
// schema.
//
// Each package that owns tables ships its migrations as a [Line]: a name and
// a file system holding files named NNN_description.up.sql and
// NNN_description.down.sql (NNN is a positive integer, usually zero padded).
// [Up] applies every pending up file of each line, in line order and then in
// version order, one transaction per file, while holding a Postgres advisory
// lock scoped to the schema, so several processes may call it at once. Each
// applied file is recorded in <schema>.schema_migrations(line, version, name,
// applied_at); applying again is a no-op.
//
// Migrations run with search_path set to the target schema only, so SQL files
// name their objects unqualified and stay readable and runnable by hand with
// psql after `SET search_path = sluice`.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Line is one package's sequence of migrations.
type Line struct {
	// Name identifies the line in schema_migrations, e.g. "pgqueue".
	Name string
	// FS holds the NNN_name.up.sql and NNN_name.down.sql files at its root.
	FS fs.FS
	// Citus, when not empty, is SQL that distributes the line's tables on
	// a Citus cluster: pgqueue/citus.Distribute runs it on the coordinator
	// after the queue tables are distributed, with search_path set to the
	// schema. It must be idempotent (each step skipped when done).
	Citus string
}

// NewLine returns the line name whose files are in folder dir of files,
// typically an embed.FS of the package's migrations folder. A dir that
// cannot be opened is a programmer error and panics.
func NewLine(name string, files fs.FS, dir string) Line {
	sub, err := fs.Sub(files, dir)
	if err != nil {
		panic(fmt.Sprintf("migrate: line %q: folder %q: %v", name, dir, err))
	}
	return Line{Name: name, FS: sub}
}

// Migration is one numbered step of a line.
type Migration struct {
	Line    string
	Version int
	Name    string
	Up      string
	Down    string
}

// ErrInvalidSchema reports a schema name that is not a plain SQL identifier.
var ErrInvalidSchema = errors.New("invalid schema name")

var schemaRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,49}$`)

// ValidateSchema reports whether name can be used as a schema: 1-50
// characters from a-z 0-9 _, not starting with a digit, and not a reserved
// pg_ prefix.
func ValidateSchema(name string) error {
	if !schemaRE.MatchString(name) || strings.HasPrefix(name, "pg_") {
		return fmt.Errorf("migrate: %w %q: use 1-50 characters from a-z 0-9 _, starting with a letter or _, not starting with pg_", ErrInvalidSchema, name)
	}
	return nil
}

var fileRE = regexp.MustCompile(`^([0-9]+)_([A-Za-z0-9_]+)\.(up|down)\.sql$`)

// Load reads and orders the migrations of a line. It fails on a malformed
// file name, a duplicate version or an up file without its down file.
func Load(l Line) ([]Migration, error) {
	if l.Name == "" || l.FS == nil {
		return nil, fmt.Errorf("migrate: line %q: name and FS are required", l.Name)
	}
	entries, err := fs.ReadDir(l.FS, ".")
	if err != nil {
		return nil, fmt.Errorf("migrate: line %q: read migrations: %w", l.Name, err)
	}
	byVersion := map[int]*Migration{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		m := fileRE.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migrate: line %q: file %q: name must look like 001_create_tables.up.sql", l.Name, e.Name())
		}
		v, err := strconv.Atoi(m[1])
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migrate: line %q: file %q: version must be a positive integer", l.Name, e.Name())
		}
		body, err := fs.ReadFile(l.FS, e.Name())
		if err != nil {
			return nil, fmt.Errorf("migrate: line %q: %w", l.Name, err)
		}
		mig := byVersion[v]
		if mig == nil {
			mig = &Migration{Line: l.Name, Version: v, Name: m[2]}
			byVersion[v] = mig
		} else if mig.Name != m[2] {
			return nil, fmt.Errorf("migrate: line %q: version %d has two names, %q and %q", l.Name, v, mig.Name, m[2])
		}
		if m[3] == "up" {
			mig.Up = string(body)
		} else {
			mig.Down = string(body)
		}
	}
	out := make([]Migration, 0, len(byVersion))
	for _, m := range byVersion {
		if m.Up == "" {
			return nil, fmt.Errorf("migrate: line %q: version %d (%s) has no up file", l.Name, m.Version, m.Name)
		}
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Up applies every pending migration of lines, in order, to schema, creating
// the schema when missing. It is idempotent and safe to call from several
// processes at once.
func Up(ctx context.Context, pool *pgxpool.Pool, schema string, lines ...Line) error {
	return run(ctx, pool, schema, lines, func(ctx context.Context, conn *pgxpool.Conn, l Line, migs []Migration) error {
		applied, err := appliedVersions(ctx, conn, schema, l.Name)
		if err != nil {
			return err
		}
		for _, m := range migs {
			if applied[m.Version] {
				continue
			}
			if err := apply(ctx, conn, schema, m, m.Up, true); err != nil {
				return err
			}
		}
		return nil
	})
}

// Down reverts every applied migration of lines, last line first and each
// line newest version first. The schema itself and its schema_migrations
// table are kept.
func Down(ctx context.Context, pool *pgxpool.Pool, schema string, lines ...Line) error {
	rev := make([]Line, len(lines))
	for i, l := range lines {
		rev[len(lines)-1-i] = l
	}
	return run(ctx, pool, schema, rev, func(ctx context.Context, conn *pgxpool.Conn, l Line, migs []Migration) error {
		applied, err := appliedVersions(ctx, conn, schema, l.Name)
		if err != nil {
			return err
		}
		for i := len(migs) - 1; i >= 0; i-- {
			m := migs[i]
			if !applied[m.Version] {
				continue
			}
			if m.Down == "" {
				return fmt.Errorf("migrate: line %q: version %d (%s) has no down file", l.Name, m.Version, m.Name)
			}
			if err := apply(ctx, conn, schema, m, m.Down, false); err != nil {
				return err
			}
		}
		return nil
	})
}

func run(ctx context.Context, pool *pgxpool.Pool, schema string, lines []Line, each func(context.Context, *pgxpool.Conn, Line, []Migration) error) error {
	if err := ValidateSchema(schema); err != nil {
		return err
	}
	loaded := make([][]Migration, len(lines))
	for i, l := range lines {
		migs, err := Load(l)
		if err != nil {
			return err
		}
		loaded[i] = migs
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: schema %s: acquire connection: %w", schema, err)
	}
	defer conn.Release()
	const lockSQL = `SELECT pg_advisory_lock(hashtext('sluice.migrate'), hashtext($1))`
	if _, err := conn.Exec(ctx, lockSQL, schema); err != nil {
		return fmt.Errorf("migrate: schema %s: take advisory lock: %w", schema, err)
	}
	defer func() {
		// Unlock on a fresh context so a cancelled ctx does not leave the
		// session lock held on a pooled connection.
		_, uerr := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext('sluice.migrate'), hashtext($1))`, schema)
		if uerr != nil {
			conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()
	ident := pgx.Identifier{schema}.Sanitize()
	setup := `CREATE SCHEMA IF NOT EXISTS ` + ident + `;
CREATE TABLE IF NOT EXISTS ` + ident + `.schema_migrations (
    line       text        NOT NULL,
    version    integer     NOT NULL,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (line, version)
);`
	if _, err := conn.Exec(ctx, setup); err != nil {
		return fmt.Errorf("migrate: schema %s: create version table: %w", schema, err)
	}
	for i, l := range lines {
		if err := each(ctx, conn, l, loaded[i]); err != nil {
			return err
		}
	}
	return nil
}

func appliedVersions(ctx context.Context, conn *pgxpool.Conn, schema, line string) (map[int]bool, error) {
	rows, err := conn.Query(ctx, `SELECT version FROM `+pgx.Identifier{schema}.Sanitize()+`.schema_migrations WHERE line = $1`, line)
	if err != nil {
		return nil, fmt.Errorf("migrate: schema %s: line %q: read versions: %w", schema, line, err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fmt.Errorf("migrate: schema %s: line %q: read versions: %w", schema, line, err)
	}
	out := make(map[int]bool, len(versions))
	for _, v := range versions {
		out[int(v)] = true
	}
	return out, nil
}

func apply(ctx context.Context, conn *pgxpool.Conn, schema string, m Migration, sql string, up bool) (err error) {
	dir := "up"
	if !up {
		dir = "down"
	}
	wrap := func(err error) error {
		return fmt.Errorf("migrate: schema %s: line %q: %03d_%s.%s.sql: %w", schema, m.Line, m.Version, m.Name, dir, err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return wrap(err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := tx.Exec(ctx, `SET LOCAL search_path = `+ident); err != nil {
		return wrap(err)
	}
	if _, err := tx.Conn().PgConn().Exec(ctx, sql).ReadAll(); err != nil {
		return wrap(err)
	}
	if up {
		_, err = tx.Exec(ctx, `INSERT INTO `+ident+`.schema_migrations (line, version, name) VALUES ($1, $2, $3)`, m.Line, m.Version, m.Name)
	} else {
		_, err = tx.Exec(ctx, `DELETE FROM `+ident+`.schema_migrations WHERE line = $1 AND version = $2`, m.Line, m.Version)
	}
	if err != nil {
		return wrap(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return wrap(err)
	}
	return nil
}

// Current returns the latest applied version of each line in schema (empty
// when nothing was applied yet).
func Current(ctx context.Context, pool *pgxpool.Pool, schema string) (map[string]int, error) {
	if err := ValidateSchema(schema); err != nil {
		return nil, err
	}
	out := map[string]int{}
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, pgx.Identifier{schema, "schema_migrations"}.Sanitize()).Scan(&exists); err != nil {
		return nil, fmt.Errorf("migrate: schema %s: read versions: %w", schema, err)
	}
	if !exists {
		return out, nil
	}
	rows, err := pool.Query(ctx, `SELECT line, max(version) FROM `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+` GROUP BY line`)
	if err != nil {
		return nil, fmt.Errorf("migrate: schema %s: read versions: %w", schema, err)
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		var v int32
		if err := rows.Scan(&line, &v); err != nil {
			return nil, fmt.Errorf("migrate: schema %s: read versions: %w", schema, err)
		}
		out[line] = int(v)
	}
	return out, rows.Err()
}
