//go:build citus

package citus_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
)

// queue_send_batch's INSERTs are router inserts into the queue's shard
// (migration 015): run on the worker holding the shard, as a delegated
// call runs there, every batch size, with and without per-message options
// and groups, executes multi-row INSERT ... VALUES statements on that
// shard locally, each row carrying its own values (not the batch's whole
// array, subscripted), and Citus never takes its INSERT ... SELECT path
// (which collects the rows as an intermediate result first). Through the
// coordinator (account_send_batch, not delegated, and the default
// account's send_batch) the same INSERTs are what it ships to the worker
// (citus.log_remote_commands). Each row's
// visibility and expiry go out as that row's timestamps, computed from its
// delay and expiry, never the delays or expiry arrays. The sequences come
// back in the batch's order, from that worker's range.
func TestSendBatchRoutedToTheShard(t *testing.T) {
	pool, schema := pgtest.Schema(t, pgqueue.Migrations)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const acct = pgqueue.DefaultAccount
	if _, err := pool.Exec(ctx, fmt.Sprintf("SELECT %s.create_queue('q')", schema)); err != nil {
		t.Fatal(err)
	}
	var id int64
	var host string
	var port uint16
	var group int64
	if err := pool.QueryRow(ctx, fmt.Sprintf(`
		SELECT q.id, n.nodename, n.nodeport, n.groupid
		  FROM %[1]s.queues q
		  JOIN pg_dist_placement p ON p.shardid = get_shard_id_for_distribution_column('%[1]s.messages', q.id)
		  JOIN pg_dist_node n ON n.groupid = p.groupid
		 WHERE q.name = 'q'`, schema)).Scan(&id, &host, &port, &group); err != nil {
		t.Fatalf("find the worker of queue q: %v", err)
	}
	cfg := pool.Config().ConnConfig.Copy()
	cfg.Host, cfg.Port, cfg.Fallbacks = host, port, nil
	cfg.RuntimeParams["citus.log_local_commands"] = "on"
	cfg.RuntimeParams["client_min_messages"] = "debug1"
	var mu sync.Mutex
	var log []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		log = append(log, n.Message)
		mu.Unlock()
	}
	worker, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect to worker %s:%d: %v", host, port, err)
	}
	defer worker.Close(context.Background())
	workerLog := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := log
		log = nil
		return out
	}
	coordinator, coordinatorLog := pgtest.RemoteCommands(t, pool)
	type querier interface {
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	}
	paths := []struct {
		what   string
		conn   querier
		take   func() []string
		call   string // %s: the bodies and options
		args   []any
		insert string // how an INSERT into the shard shows in the notices
		// bodiesOnly: the call takes no per-message options (the
		// default account's send_batch, whose INSERT from unnest of
		// migration 018 must not run on Citus).
		bodiesOnly bool
	}{
		{"on the worker", worker, workerLog, schema + ".queue_send_batch($1, $2, 'q', %s)", []any{id, acct},
			"executing the command locally: INSERT INTO " + schema + ".messages_", false},
		{"through the coordinator", coordinator, coordinatorLog, schema + ".account_send_batch($1, 'q', %s)", []any{acct},
			"issuing INSERT INTO " + schema + ".messages_", false},
		{"send_batch through the coordinator", coordinator, coordinatorLog, schema + ".send_batch('q', %s)", nil,
			"issuing INSERT INTO " + schema + ".messages_", true},
	}

	// Per-message options for a batch of {n}, with NULLs inside (every
	// third message none of each): delays 1 to 9 s, expiry 3,601 to 3,609
	// s, a header, two groups.
	const (
		delays  = "(SELECT array_agg(CASE WHEN g % 3 <> 0 THEN g % 10 END ORDER BY g) FROM generate_series(1, {n}) g)"
		expiry  = "(SELECT array_agg(CASE WHEN g % 3 <> 1 THEN 3600 + g % 10 END ORDER BY g) FROM generate_series(1, {n}) g)"
		headers = "(SELECT array_agg(CASE WHEN g % 3 <> 2 THEN jsonb_build_object('h', g) END ORDER BY g) FROM generate_series(1, {n}) g)"
		groups  = "(SELECT array_agg('g' || g % 2 ORDER BY g) FROM generate_series(1, {n}) g)"
	)
	var last int64
	for _, p := range paths {
		for _, c := range []struct {
			what, options string
		}{
			{"bodies only", ""},
			{"with headers", ", 0, array_fill('{\"h\":\"v\"}'::jsonb, ARRAY[{n}])"},
			{"in a group", ", 0, NULL, NULL, NULL, NULL, array_fill('g'::text, ARRAY[{n}])"},
			{"with delays and expiry", ", 0, NULL, " + delays + ", " + expiry},
			{"with every option", ", 0, " + headers + ", " + delays + ", " + expiry + ", NULL, " + groups},
		} {
			if p.bodiesOnly && c.options != "" {
				continue
			}
			for _, n := range []int{1, 2, 9, 10, 23, 100, 123} {
				what := fmt.Sprintf("%s, %s, %d messages", p.what, c.what, n)
				batch := strings.ReplaceAll("(SELECT array_agg(jsonb_build_object('i', g)) FROM generate_series(1, {n}) g)"+c.options,
					"{n}", fmt.Sprint(n))
				p.take()
				rows, err := p.conn.Query(ctx, "SELECT s FROM "+fmt.Sprintf(p.call, batch)+" s", p.args...)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
				if err != nil || len(seqs) != n {
					t.Fatalf("%s: %v %v", what, seqs, err)
				}
				for _, s := range seqs {
					if s <= last || s>>48 != group {
						t.Fatalf("%s: sequence %d after %d (worker group %d)", what, s, last, group)
					}
					last = s
				}
				log := p.take()
				rowsShipped := 0
				var inserts []string
				for _, m := range log {
					if strings.Contains(m, "INSERT ... SELECT") || strings.Contains(m, "intermediate result") ||
						strings.Contains(m, "read_intermediate_result") {
						t.Errorf("%s: Citus took the INSERT ... SELECT path: %s", what, m)
					}
					if strings.Contains(m, "[])[") {
						t.Errorf("%s: a row shipped a whole array, subscripted: %.300s", what, m)
					}
					if strings.HasPrefix(m, p.insert) && strings.Contains(m, " VALUES ") {
						inserts = append(inserts, m)
						rowsShipped += strings.Count(m, "'-1'::bigint") // the sequence marker of each row (migration 013)
					}
				}
				if rowsShipped != n {
					t.Errorf("%s: the INSERT ... VALUES statements into the shard carried %d rows", what, rowsShipped)
				}
				shipped := strings.Join(inserts, "\n")
				// Each row's visibility (kept in ready_at when the row waits
				// behind its group's head, migration 008) and expiry went out
				// as its own timestamp; the delays and expiry arrays did not.
				nth := func(q string) string { return strings.ReplaceAll(q, "{n}", fmt.Sprint(n)) }
				var arrays []string
				if err := p.conn.QueryRow(ctx, "SELECT ARRAY["+nth(delays)+"::text, "+nth(expiry)+"::text]").Scan(&arrays); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				stored, err := p.conn.Query(ctx, fmt.Sprintf(`SELECT coalesce(ready_at, visible_at)::text, expires_at::text
					  FROM %s.messages WHERE queue_id = $1 AND sequence = ANY ($2)`, schema), id, seqs)
				if err != nil {
					t.Fatalf("%s: read the rows back: %v", what, err)
				}
				var times []string
				for stored.Next() {
					var visible string
					var expires *string
					if err := stored.Scan(&visible, &expires); err != nil {
						t.Fatalf("%s: read the rows back: %v", what, err)
					}
					times = append(times, visible)
					if expires != nil {
						times = append(times, *expires)
					}
				}
				if err := stored.Err(); err != nil || len(times) < n {
					t.Fatalf("%s: read the rows back: %d timestamps, %v", what, len(times), err)
				}
				for _, v := range times {
					if !strings.Contains(shipped, "'"+v+"'::timestamp with time zone") {
						t.Errorf("%s: timestamp %s of a stored row is not in the INSERTs shipped: %.300s", what, v, shipped)
					}
				}
				for _, a := range arrays {
					if strings.Contains(shipped, "'"+a+"'") {
						t.Errorf("%s: the array %s went out with the INSERTs: %.300s", what, a, shipped)
					}
				}
			}
		}
	}
}
