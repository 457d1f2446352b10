// Command loadgen drives the HTTP API of a running `sluice serve` with
// concurrent keep-alive clients and reports throughput and latency:
//
//	go run ./server/internal/loadgen -url http://127.0.0.1:8080 \
//	    -key sk_...:secret -account 000000000001 -queue bench -op send -c 16 -n 20000
//
// Ops: send (one POST per message), batch (POST of 10 messages), recvdel
// (receive one message, then DELETE it with its receipt). It is a separate
// process so the server's CPU is not shared with the client's in-process.
// pg-send, pg-batch and pg-recvdel do the same through pgqueue.Client
// straight on the database (-database, -schema), for comparison.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/pgqueue"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "API base URL")
	key := flag.String("key", os.Getenv("SLUICE_KEY"), "access key ID:SECRET [SLUICE_KEY]")
	account := flag.String("account", "000000000001", "account")
	queue := flag.String("queue", "bench", "queue (must exist)")
	op := flag.String("op", "send", "send, batch or recvdel")
	conc := flag.Int("c", 16, "concurrent clients")
	n := flag.Int("n", 10000, "operations in total")
	database := flag.String("database", os.Getenv("DATABASE_URL"), "Postgres URL for the pg- ops [DATABASE_URL]")
	schema := flag.String("schema", "sluice", "schema for the pg- ops")
	flag.Parse()
	if strings.HasPrefix(*op, "pg-") {
		var err error
		if pgq, err = pgClient(*database, *schema, *conc); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(1)
		}
	}
	if err := run(*url, *key, *account, *queue, *op, *conc, *n); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

var body = []byte(`{"order_id":12345,"customer":"c-981","items":[{"sku":"A-1","qty":2}],"total_cents":4599}`)

func run(base, key, account, queue, op string, conc, n int) error {
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: conc * 2, MaxIdleConnsPerHost: conc * 2}, Timeout: 30 * time.Second}
	do := func(method, path string, b []byte) (int, []byte, error) {
		req, err := http.NewRequest(method, base+path, bytes.NewReader(b))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		if b != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer res.Body.Close()
		out, err := io.ReadAll(res.Body)
		return res.StatusCode, out, err
	}
	q := "/" + account + "/" + queue
	batch := []byte("[" + string(bytes.Repeat(append(body, ','), 9)) + string(body) + "]")
	var one func() error
	switch op {
	case "send":
		one = func() error { return expect(do("POST", q+"/messages", body))(201) }
	case "batch":
		one = func() error { return expect(do("POST", q+"/messages", batch))(201) }
	case "recvdel":
		one = func() error {
			code, out, err := do("POST", q+"/messages/receive", []byte(`{"visibility_timeout_seconds":60}`))
			if err := expect(code, out, err)(200); err != nil {
				return err
			}
			var r struct {
				Messages []struct {
					Sequence int64  `json:"sequence"`
					Receipt  string `json:"receipt"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(out, &r); err != nil {
				return err
			}
			if len(r.Messages) == 0 {
				return errEmpty
			}
			m := r.Messages[0]
			return expect(do("DELETE", fmt.Sprintf("%s/messages/%d?receipt=%s", q, m.Sequence, m.Receipt), nil))(204)
		}
	case "pg-send":
		one = func() error {
			_, err := pgq.Send(ctx, account, queue, pgqueue.NewMessage{Body: body})
			return err
		}
	case "pg-batch":
		ms := make([]pgqueue.NewMessage, 10)
		for i := range ms {
			ms[i] = pgqueue.NewMessage{Body: body}
		}
		one = func() error {
			_, err := pgq.SendBatch(ctx, account, queue, ms)
			return err
		}
	case "pg-recvdel":
		one = func() error {
			got, err := pgq.Receive(ctx, account, queue, pgqueue.ReceiveOptions{Max: 1, VisibilityTimeout: time.Minute})
			if err != nil {
				return err
			}
			if len(got) == 0 {
				return errEmpty
			}
			return pgq.Delete(ctx, account, queue, got[0].Sequence, got[0].Receipt)
		}
	default:
		return fmt.Errorf("unknown -op %q: use send, batch, recvdel, pg-send, pg-batch or pg-recvdel", op)
	}

	var next atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	var failed, empty atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Go(func() {
			var mine []time.Duration
			for next.Add(1) <= int64(n) {
				t0 := time.Now()
				err := one()
				mine = append(mine, time.Since(t0))
				switch {
				case err == errEmpty:
					empty.Add(1)
				case err != nil:
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	fmt.Printf("op=%s c=%d n=%d elapsed=%v ops/s=%.0f p50=%v p90=%v p99=%v max=%v empty=%d failed=%d\n",
		op, conc, n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(),
		pct(0.5).Round(10*time.Microsecond), pct(0.9).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond),
		lat[len(lat)-1].Round(10*time.Microsecond), empty.Load(), failed.Load())
	if e := firstErr.Load(); e != nil {
		return fmt.Errorf("%d operations failed, first: %v", failed.Load(), e)
	}
	return nil
}

var errEmpty = fmt.Errorf("empty receive")

var (
	pgq *pgqueue.Client
	ctx = context.Background()
)

func pgClient(url, schema string, conns int) (*pgqueue.Client, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(conns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return pgqueue.New(pool, pgqueue.Options{Schema: schema})
}

func expect(code int, out []byte, err error) func(int) error {
	return func(want int) error {
		if err != nil {
			return err
		}
		if code != want {
			return fmt.Errorf("status %d, want %d: %s", code, want, out)
		}
		return nil
	}
}
