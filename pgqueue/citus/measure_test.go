//go:build citus

package citus_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
)

// TestMeasureHotPath measures, on the cluster, the hot path run on the
// coordinator (account_* by name) against the same calls by queue id,
// delegated to the worker: send_batch of 10, and receive 10 then ack
// them in a second transaction (the pair counts as one). 8 clients,
// 5 s per run, the four workloads alternating, 3 rounds; it logs every run
// and the medians in transactions/s. Only with SLUICE_MEASURE=1 (rounds:
// SLUICE_MEASURE_ROUNDS): it takes a minute and its figures depend on the
// machine. docs/scale-out.md, "The hot path on the workers", has the
// figures and the command.
//
// receive + ack is measured from Go, not pgbench: the ack needs the
// sequences the receive returned, and pgbench's \gset takes one row,
// which only an aggregate over the call would give, and Citus does not
// delegate a call under an aggregate.
func TestMeasureHotPath(t *testing.T) {
	if os.Getenv("SLUICE_MEASURE") != "1" {
		t.Skip("set SLUICE_MEASURE=1 to measure")
	}
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("SLUICE_MEASURE_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	const clients, per = 8, 5 * time.Second
	pool, schema := pgtest.Schema(t, pgqueue.Migrations)
	ctx := context.Background()
	cfg := pool.Config()
	cfg.MaxConns = clients
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const acct = pgqueue.DefaultAccount
	if _, err := p.Exec(ctx, "SELECT "+schema+".create_queue('bq')"); err != nil {
		t.Fatal(err)
	}
	var qid int64
	if err := p.QueryRow(ctx, "SELECT "+schema+".queue_id($1, 'bq')", acct).Scan(&qid); err != nil {
		t.Fatal(err)
	}
	bodies := make([]string, 10)
	for i := range bodies {
		bodies[i] = fmt.Sprintf(`{"n":%d}`, i+1)
	}
	s := schema
	type workload struct {
		name string
		run  func(context.Context, *pgxpool.Conn) error
	}
	sends := func(sql string, args ...any) func(context.Context, *pgxpool.Conn) error {
		return func(ctx context.Context, c *pgxpool.Conn) error {
			_, err := c.Exec(ctx, sql, args...)
			return err
		}
	}
	pair := func(recv, ack string, args ...any) func(context.Context, *pgxpool.Conn) error {
		return func(ctx context.Context, c *pgxpool.Conn) error {
			rows, err := c.Query(ctx, recv, args...)
			if err != nil {
				return err
			}
			type lease struct {
				Sequence int64
				Receipt  pgtype.UUID
			}
			ls, err := pgx.CollectRows(rows, pgx.RowToStructByPos[lease])
			if err != nil {
				return err
			}
			seqs := make([]int64, len(ls))
			receipts := make([]pgtype.UUID, len(ls))
			for i, l := range ls {
				seqs[i], receipts[i] = l.Sequence, l.Receipt
			}
			_, err = c.Exec(ctx, ack, append(args[:len(args):len(args)], seqs, receipts)...)
			return err
		}
	}
	ws := []workload{
		{"send_batch 10, coordinator (account_send_batch)", sends("SELECT s FROM "+s+".account_send_batch($1, 'bq', $2) s", acct, bodies)},
		{"send_batch 10, delegated (queue_send_batch)", sends("SELECT s FROM "+s+".queue_send_batch($1, $2, 'bq', $3) s", qid, acct, bodies)},
		{"receive 10 + ack, coordinator (account_*)", pair(
			"SELECT sequence, receipt FROM "+s+".account_receive($1, 'bq', 10)",
			"SELECT s FROM "+s+".account_ack($1, 'bq', $2, $3) s", acct)},
		{"receive 10 + ack, delegated (queue_*)", pair(
			"SELECT sequence, receipt FROM "+s+".queue_receive($1, $2, 'bq', 10)",
			"SELECT s FROM "+s+".queue_ack($1, $2, 'bq', $3, $4) s", qid, acct)},
	}
	refill := func() {
		t.Helper()
		for _, q := range []string{
			"TRUNCATE " + s + ".messages",
			fmt.Sprintf("INSERT INTO %s.messages (queue_id, visible_at, body) SELECT %d, now() - interval '1 second', jsonb_build_object('n', g) FROM generate_series(1, 100000) g", s, qid),
			"VACUUM ANALYZE " + s + ".messages",
		} {
			if _, err := p.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	measure := func(w workload) float64 {
		t.Helper()
		var n atomic.Int64
		var wg sync.WaitGroup
		var first atomic.Value
		end := time.Now().Add(per)
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := p.Acquire(ctx)
				if err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
				defer c.Release()
				for time.Now().Before(end) {
					if err := w.run(ctx, c); err != nil {
						first.CompareAndSwap(nil, err)
						return
					}
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		if err, _ := first.Load().(error); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		return float64(n.Load()) / per.Seconds()
	}
	all := make([][]float64, len(ws))
	for r := range rounds {
		for i, w := range ws {
			if i == 2 || i == 3 {
				refill()
			}
			all[i] = append(all[i], measure(w))
		}
		t.Logf("round %d (tps): %.0f %.0f %.0f %.0f", r+1, all[0][r], all[1][r], all[2][r], all[3][r])
	}
	t.Logf("%d clients, %v runs, %d rounds, medians in transactions/s:", clients, per, rounds)
	for i, w := range ws {
		v := slices.Clone(all[i])
		slices.Sort(v)
		t.Logf("  %-48s %8.0f  (runs %.0f)", w.name, v[len(v)/2], all[i])
	}
}
