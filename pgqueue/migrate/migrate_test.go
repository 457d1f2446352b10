package migrate_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/pgqueue/migrate"
)

func TestMigrateIdempotentConcurrentAndDown(t *testing.T) {
	t.Parallel()
	pool, schema := pgtest.Schema(t) // empty schema: nothing applied yet
	ctx := context.Background()
	extra := migrate.Line{Name: "extra", FS: fstest.MapFS{
		"001_things.up.sql":   {Data: []byte(`CREATE TABLE things (id int); INSERT INTO things VALUES (1);`)},
		"001_things.down.sql": {Data: []byte(`DROP TABLE things;`)},
		"002_more.up.sql":     {Data: []byte(`ALTER TABLE things ADD COLUMN name text;`)},
		"002_more.down.sql":   {Data: []byte(`ALTER TABLE things DROP COLUMN name;`)},
	}}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = migrate.Up(ctx, pool, schema, pgqueue.Migrations, extra) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := migrate.Up(ctx, pool, schema, pgqueue.Migrations, extra); err != nil {
		t.Fatal(err)
	}
	core, err := migrate.Load(pgqueue.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()).Scan(&n); err != nil || n != len(core)+2 {
		t.Fatalf("schema_migrations has %d rows (%v), want %d", n, err, len(core)+2)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "things"}.Sanitize()).Scan(&n); err != nil || n != 1 {
		t.Fatalf("things applied %d times (%v)", n, err)
	}
	if err := migrate.Down(ctx, pool, schema, pgqueue.Migrations, extra); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relnamespace = $1::regnamespace AND relname <> 'schema_migrations' AND relname NOT LIKE 'schema_migrations%'`, schema).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d relations left after down (%v)", n, err)
	}
	if err := migrate.Up(ctx, pool, schema, pgqueue.Migrations); err != nil {
		t.Fatalf("up after down: %v", err)
	}
}

func TestMigrateRejectsBadInput(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	ctx := context.Background()
	for _, s := range []string{"", "Sluice", "a-b", "1abc", "pg_x", "x;drop"} {
		if err := migrate.Up(ctx, pool, s, pgqueue.Migrations); !errors.Is(err, migrate.ErrInvalidSchema) {
			t.Errorf("schema %q: %v, want ErrInvalidSchema", s, err)
		}
	}
	bad := migrate.Line{Name: "bad", FS: fstest.MapFS{"1-create.sql": {Data: []byte(`SELECT 1`)}}}
	if _, err := migrate.Load(bad); err == nil {
		t.Error("malformed file name accepted")
	}
	noUp := migrate.Line{Name: "bad", FS: fstest.MapFS{"001_x.down.sql": {Data: []byte(`SELECT 1`)}}}
	if _, err := migrate.Load(noUp); err == nil {
		t.Error("down without up accepted")
	}
	// A failing migration rolls back and is not recorded.
	_, schema := pgtest.Schema(t)
	failing := migrate.Line{Name: "failing", FS: fstest.MapFS{
		"001_ok.up.sql":  {Data: []byte(`CREATE TABLE ok (id int);`)},
		"002_bad.up.sql": {Data: []byte(`CREATE TABLE half (id int); SELECT no_such_function();`)},
	}}
	if err := migrate.Up(ctx, pool, schema, failing); err == nil {
		t.Fatal("failing migration succeeded")
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+` WHERE line = 'failing'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("recorded %d versions (%v), want 1", n, err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relnamespace = $1::regnamespace AND relname = 'half'`, schema).Scan(&n); err != nil || n != 0 {
		t.Fatal("failed migration left a table behind")
	}
}
