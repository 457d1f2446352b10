package pgqueue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
)

const acct = pgqueue.DefaultAccount

type env struct {
	t      *testing.T
	ctx    context.Context
	c      *pgqueue.Client
	pool   *pgxpool.Pool
	schema string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	pool, schema := pgtest.Schema(t, pgqueue.Migrations)
	c, err := pgqueue.New(pool, pgqueue.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: context.Background(), c: c, pool: pool, schema: schema}
}

// poolOf returns a pool of at most n connections to the test's database,
// closed when the test ends.
func (e *env) poolOf(n int32) *pgxpool.Pool {
	e.t.Helper()
	cfg := e.pool.Config()
	cfg.MaxConns = n
	pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(pool.Close)
	return pool
}

// schemaTx begins a transaction with search_path set to the test schema,
// the way a psql user would after SET search_path = sluice; the caller
// commits or rolls it back.
func (e *env) schemaTx() pgx.Tx {
	e.t.Helper()
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, "SET LOCAL search_path = "+pgxIdent(e.schema)); err != nil {
		tx.Rollback(e.ctx)
		e.t.Fatal(err)
	}
	return tx
}

// sqlErr runs a statement in the test schema that must fail, rolls back,
// and returns the database's error.
func (e *env) sqlErr(query string) *pgconn.PgError {
	e.t.Helper()
	tx := e.schemaTx()
	defer tx.Rollback(e.ctx)
	_, err := tx.Exec(e.ctx, query)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		e.t.Fatalf("%s: %v, want an SQL error", query, err)
	}
	return pgErr
}

// rows runs a query with search_path set to the test schema, the way a
// psql user would after SET search_path = sluice, commits, and returns
// every row's values.
func (e *env) rows(query string, args ...any) [][]any {
	e.t.Helper()
	tx := e.schemaTx()
	defer tx.Rollback(e.ctx)
	rows, err := tx.Query(e.ctx, query, args...)
	if err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
	var out [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// one returns the first column of the first row of a query.
func (e *env) one(query string, args ...any) any {
	e.t.Helper()
	rows := e.rows(query, args...)
	if len(rows) == 0 || len(rows[0]) == 0 {
		e.t.Fatalf("%s: no rows", query)
	}
	return rows[0][0]
}

// exec runs a statement in the test schema and commits.
func (e *env) exec(query string, args ...any) {
	e.t.Helper()
	tx := e.schemaTx()
	defer tx.Rollback(e.ctx)
	if _, err := tx.Exec(e.ctx, query, args...); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) queue(name string, s pgqueue.Settings) {
	e.t.Helper()
	if _, err := e.c.CreateQueue(e.ctx, acct, name, s); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) send(queue string, body string) int64 {
	e.t.Helper()
	seq, err := e.c.Send(e.ctx, acct, queue, pgqueue.NewMessage{Body: json.RawMessage(body)})
	if err != nil {
		e.t.Fatal(err)
	}
	return seq
}

func (e *env) receive(queue string, o pgqueue.ReceiveOptions) []pgqueue.Message {
	e.t.Helper()
	msgs, err := e.c.Receive(e.ctx, acct, queue, o)
	if err != nil {
		e.t.Fatal(err)
	}
	return msgs
}

func (e *env) stats(queue string) pgqueue.Stats {
	e.t.Helper()
	s, err := e.c.Stats(e.ctx, acct, queue)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) sweep() int64 {
	e.t.Helper()
	n, err := e.c.Sweep(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// startSweeper starts a sweeper on the test's client with o and stops it
// at cleanup (again, if the test stopped it); a sweep that fails fails the
// test.
func (e *env) startSweeper(o pgqueue.SweeperOptions) *pgqueue.Sweeper {
	e.t.Helper()
	o.OnError = func(err error) { e.t.Error(err) }
	s := pgqueue.NewSweeper(e.c, o)
	if err := s.Start(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		if err := s.Stop(e.ctx); err != nil {
			e.t.Error(err)
		}
	})
	return s
}

func seqs(msgs []pgqueue.Message) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.Sequence
	}
	return out
}

func body(i int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)) }

// waitPast sleeps until t (a database time) has certainly passed.
func waitPast(t time.Time) {
	time.Sleep(time.Until(t) + 150*time.Millisecond)
}

func pgxIdent(s string) string { return pgx.Identifier{s}.Sanitize() }
