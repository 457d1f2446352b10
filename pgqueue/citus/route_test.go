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
// (which collects the rows as an intermediate result first). The
// sequences come back in the batch's order, from that worker's range.
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
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := log
		log = nil
		return out
	}

	var last int64
	for _, c := range []struct {
		what, options string
	}{
		{"bodies only", ""},
		{"with headers", ", 0, array_fill('{\"h\":\"v\"}'::jsonb, ARRAY[$4::int])"},
		{"in a group", ", 0, NULL, NULL, NULL, NULL, array_fill('g'::text, ARRAY[$4::int])"},
	} {
		for _, n := range []int{1, 2, 9, 10, 23, 100, 123} {
			what := fmt.Sprintf("%s, %d messages", c.what, n)
			args := []any{id, acct, n}
			if c.options != "" {
				args = append(args, n)
			}
			take()
			rows, err := worker.Query(ctx, fmt.Sprintf(
				"SELECT s FROM %s.queue_send_batch($1, $2, 'q', (SELECT array_agg(jsonb_build_object('i', g)) FROM generate_series(1, $3::int) g)%s) s",
				schema, c.options), args...)
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
			inserts := 0
			for _, m := range take() {
				if strings.Contains(m, "INSERT ... SELECT") || strings.Contains(m, "intermediate result") ||
					strings.Contains(m, "read_intermediate_result") {
					t.Errorf("%s: Citus took the INSERT ... SELECT path: %s", what, m)
				}
				if strings.Contains(m, "[])[") {
					t.Errorf("%s: a row shipped a whole array, subscripted: %.300s", what, m)
				}
				if strings.HasPrefix(m, "executing the command locally: INSERT INTO "+schema+".messages_") &&
					strings.Contains(m, " VALUES ") {
					inserts++
				}
			}
			if inserts == 0 {
				t.Errorf("%s: no INSERT ... VALUES executed locally on the shard", what)
			}
		}
	}
}
