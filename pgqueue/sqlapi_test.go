package pgqueue_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// The SQL API works from any Postgres client on the default account, with
// search_path set to the schema the way psql users work.
func TestSQLAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	one := e.one
	count := func(query string, args ...any) int { return len(e.rows(query, args...)) }
	e.exec(`SELECT create_queue('emails', '{"max_receive_count": 2, "visibility_timeout_seconds": 60}')`)
	e.exec(`SELECT update_queue('emails', '{"delay_seconds": 0}')`)
	seq := one(`SELECT send('emails', '{"to":"a@example.com"}', 0, '{"h":1}', 3600, 'k1')`).(int64)
	if again := one(`SELECT send('emails', '{"to":"b@example.com"}', dedup_key => 'k1')`).(int64); again != seq {
		t.Fatalf("dedup via SQL returned %d, want %d", again, seq)
	}
	if n := count(`SELECT * FROM send_batch('emails', ARRAY['1', '2', '3']::jsonb[])`); n != 3 {
		t.Fatalf("send_batch returned %d rows", n)
	}
	if n := count(`SELECT * FROM peek('emails')`); n != 4 {
		t.Fatalf("peek returned %d rows", n)
	}
	var got []int64
	for _, r := range e.rows(`SELECT sequence, receive_count, receipt FROM receive('emails', 2, 30)`) {
		got = append(got, r[0].(int64))
	}
	if len(got) != 2 || got[0] != seq {
		t.Fatalf("receive returned %v", got)
	}
	e.exec(`SELECT delete('emails', $1)`, got[0])
	e.exec(`SELECT set_visibility('emails', $1, 0)`, got[1])
	if v := one(`SELECT delete('emails', $1)`, got[0]); v != false {
		t.Fatalf("second delete returned %v", v)
	}
	if v := one(`SELECT ready FROM queue_stats WHERE queue = 'emails'`); v != int64(3) {
		t.Fatalf("ready = %v", v)
	}
	e.exec(`SELECT create_topic('orders')`)
	e.exec(`SELECT create_queue('stock')`)
	e.exec(`SELECT subscribe('orders', 'emails')`)
	e.exec(`SELECT subscribe('orders', 'stock')`)
	if n := one(`SELECT publish('orders', '{"order": 1}')`); n != int32(2) {
		t.Fatalf("publish made %v copies", n)
	}
	e.exec(`SELECT unsubscribe('orders', 'stock')`)
	if n := one(`SELECT purge('stock')`); n != int64(1) {
		t.Fatalf("purge removed %v", n)
	}
	// DLQ by SQL: fail one message through the account form, then work it.
	e.exec(`SELECT account_fail('000000000001', 'emails', ARRAY[$1::bigint], NULL, NULL, ARRAY['boom'])`, got[1])
	if n := count(`SELECT * FROM receive_dlq('emails')`); n != 1 {
		t.Fatalf("receive_dlq returned %d", n)
	}
	if n := one(`SELECT redrive('emails')`); n != int64(1) {
		t.Fatalf("redrive moved %v", n)
	}
	e.exec(`SELECT account_fail('000000000001', 'emails', ARRAY[$1::bigint])`, got[1])
	if v := one(`SELECT delete_dlq('emails', $1)`, got[1]); v != true {
		t.Fatalf("delete_dlq returned %v", v)
	}
	if n := one(`SELECT purge_dlq('emails')`); n != int64(0) {
		t.Fatalf("purge_dlq removed %v", n)
	}
	if n := one(`SELECT sweep()`); n != int64(0) {
		t.Fatalf("sweep returned %v", n)
	}
	if v := one(`SELECT delete_queue('stock')`); v != true {
		t.Fatalf("delete_queue returned %v", v)
	}

	// Errors carry SQLSTATE codes in class SQ.
	tx, _ := e.pool.Begin(e.ctx)
	defer tx.Rollback(e.ctx)
	_, err := tx.Exec(e.ctx, `SELECT `+pgxIdent(e.schema)+`.send('nope', '1')`)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "SQ001" || pgErr.Message != `queue "nope" not found in account 000000000001` {
		t.Fatalf("send to missing queue: %v", err)
	}
}
