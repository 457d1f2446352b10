package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/wire"
)

// The HTTP API against the queue core underneath it, on the same database,
// with concurrent clients (GOMAXPROCS × benchParallelism goroutines):
//
//	go test ./server -run XXX -bench . -benchtime 3000x
//
// Each benchmark reports ops/s and per-operation latency percentiles;
// BenchmarkHTTPNoDatabase is the HTTP layer alone (TCP, auth, body, JSON
// check, error rendering) with no database work behind it.

const benchParallelism = 8

// benchServer is a started Server listening on TCP, as `sluice serve` runs.
type benchServer struct {
	srv     *Server
	base    string
	token   string
	account string
	client  *http.Client
}

func newBenchServer(b *testing.B) *benchServer {
	b.Helper()
	srv := startListening(b, 16)
	ctx := context.Background()
	account := "000000000001"
	id, secret, err := srv.CreateKey(ctx, account, []string{ScopeAllMQ}, nil, "bench")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := srv.queue.CreateQueue(ctx, account, "bench", pgqueue.Settings{}); err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}
	b.Cleanup(tr.CloseIdleConnections)
	return &benchServer{srv: srv, base: "http://" + srv.Addr(), token: id + ":" + secret, account: account,
		client: &http.Client{Transport: tr}}
}

func (s *benchServer) do(method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	return res.StatusCode, out, err
}

// latencies collects per-operation durations from parallel goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(ds []time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, ds...)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B, elapsed time.Duration) {
	slices.Sort(l.d)
	if len(l.d) == 0 {
		return
	}
	pct := func(p float64) float64 {
		return float64(l.d[min(len(l.d)-1, int(p*float64(len(l.d))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// runParallel runs op b.N times over the parallel goroutines, timing each.
func runParallel(b *testing.B, op func() error) {
	var lat latencies
	var failures atomic.Int64
	var firstErr atomic.Value
	b.SetParallelism(benchParallelism)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var ds []time.Duration
		for pb.Next() {
			t0 := time.Now()
			if err := op(); err != nil {
				failures.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
			ds = append(ds, time.Since(t0))
		}
		lat.add(ds)
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if n := failures.Load(); n > 0 {
		b.Fatalf("%d operations failed, first: %v", n, firstErr.Load())
	}
	lat.report(b, elapsed)
}

var benchBody = []byte(`{"order_id":12345,"customer":"c-981","items":[{"sku":"A-1","qty":2}],"total_cents":4599}`)

func BenchmarkHTTPSend(b *testing.B) {
	s := newBenchServer(b)
	path := "/" + s.account + "/bench/messages"
	runParallel(b, func() error {
		code, body, err := s.do("POST", path, benchBody)
		if err == nil && code != 201 {
			err = fmt.Errorf("send: %d %s", code, body)
		}
		return err
	})
}

func BenchmarkPgqueueSend(b *testing.B) {
	s := newBenchServer(b)
	ctx := context.Background()
	runParallel(b, func() error {
		_, err := s.srv.queue.Send(ctx, s.account, "bench", pgqueue.NewMessage{Body: benchBody})
		return err
	})
}

// fill sends n messages for the receive benchmarks, outside the timer.
func (s *benchServer) fill(b *testing.B, n int) {
	b.Helper()
	ctx := context.Background()
	batch := make([]pgqueue.NewMessage, 0, 1000)
	for sent := 0; sent < n; sent += len(batch) {
		batch = batch[:0]
		for range min(1000, n-sent) {
			batch = append(batch, pgqueue.NewMessage{Body: benchBody})
		}
		if _, err := s.srv.queue.SendBatch(ctx, s.account, "bench", batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHTTPReceiveDelete: one op is a receive of one message and the
// delete of it with its receipt (two requests).
func BenchmarkHTTPReceiveDelete(b *testing.B) {
	s := newBenchServer(b)
	s.fill(b, b.N)
	recv := "/" + s.account + "/bench/messages/receive"
	var empty atomic.Int64
	runParallel(b, func() error {
		code, body, err := s.do("POST", recv, []byte(`{"visibility_timeout_seconds":60}`))
		if err != nil || code != 200 {
			return fmt.Errorf("receive: %d %s %v", code, body, err)
		}
		var out struct{ Messages []wire.Message }
		if err := json.Unmarshal(body, &out); err != nil {
			return err
		}
		if len(out.Messages) == 0 {
			empty.Add(1)
			return nil
		}
		m := out.Messages[0]
		code, body, err = s.do("DELETE", fmt.Sprintf("/%s/bench/messages/%d?receipt=%s", s.account, m.Sequence, m.Receipt), nil)
		if err == nil && code != 204 {
			err = fmt.Errorf("delete: %d %s", code, body)
		}
		return err
	})
	b.ReportMetric(float64(empty.Load()), "empty-receives")
}

// BenchmarkHTTPReceiveBatch: one op is a receive of 10 messages with
// delete (one request): the receives whose claims hold the most of
// Config.ReceiveBytes while they run (10 MiB each).
func BenchmarkHTTPReceiveBatch(b *testing.B) {
	s := newBenchServer(b)
	s.fill(b, 10*b.N)
	recv := "/" + s.account + "/bench/messages/receive"
	var short atomic.Int64
	runParallel(b, func() error {
		code, body, err := s.do("POST", recv, []byte(`{"max_messages":10,"delete":true}`))
		if err != nil || code != 200 {
			return fmt.Errorf("receive: %d %s %v", code, body, err)
		}
		var out struct{ Messages []wire.Message }
		if err := json.Unmarshal(body, &out); err != nil {
			return err
		}
		if len(out.Messages) < 10 {
			short.Add(1)
		}
		return nil
	})
	b.ReportMetric(float64(short.Load()), "short-receives")
}

func BenchmarkPgqueueReceiveDelete(b *testing.B) {
	s := newBenchServer(b)
	s.fill(b, b.N)
	ctx := context.Background()
	var empty atomic.Int64
	runParallel(b, func() error {
		ms, err := s.srv.queue.Receive(ctx, s.account, "bench", pgqueue.ReceiveOptions{Max: 1, VisibilityTimeout: time.Minute})
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			empty.Add(1)
			return nil
		}
		return s.srv.queue.Delete(ctx, s.account, "bench", ms[0].Sequence, ms[0].Receipt)
	})
	b.ReportMetric(float64(empty.Load()), "empty-receives")
}

// BenchmarkHTTPNoDatabase is the HTTP layer's own cost: an authenticated
// send of a batch of 11, refused with 400 before any database work.
func BenchmarkHTTPNoDatabase(b *testing.B) {
	s := newBenchServer(b)
	path := "/" + s.account + "/bench/messages"
	body := bytes.Repeat([]byte(`1,`), 10)
	body = append(append([]byte("["), body...), []byte(`1]`)...)
	if _, _, err := s.do("POST", path, body); err != nil { // warm the key cache
		b.Fatal(err)
	}
	runParallel(b, func() error {
		code, out, err := s.do("POST", path, body)
		if err == nil && code != 400 {
			err = fmt.Errorf("want 400, got %d %s", code, out)
		}
		return err
	})
}

// BenchmarkHandlerNoDatabase is the same refused send through the
// Handler directly (no network, no client): the server's own CPU per
// request for routing, auth (cached key), body read, JSON check and error.
func BenchmarkHandlerNoDatabase(b *testing.B) {
	s := newBenchServer(b)
	h := s.srv.Handler()
	path := "/" + s.account + "/bench/messages"
	body := []byte(`[1,2,3,4,5,6,7,8,9,10,11]`)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.token)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 400 {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkHandlerSend is a send through the Handler directly: the
// database work plus the server's HTTP layer, without network or client.
func BenchmarkHandlerSend(b *testing.B) {
	s := newBenchServer(b)
	h := s.srv.Handler()
	path := "/" + s.account + "/bench/messages"
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", path, bytes.NewReader(benchBody))
		req.Header.Set("Authorization", "Bearer "+s.token)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 201 {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkPgqueueSendSerial is one client sending through pgqueue, to
// compare with BenchmarkHandlerSend.
func BenchmarkPgqueueSendSerial(b *testing.B) {
	s := newBenchServer(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.srv.queue.Send(ctx, s.account, "bench", pgqueue.NewMessage{Body: benchBody}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuthenticate compares the cost of verifying a valid, an unknown,
// a wrong and a revoked key (cache warm): the three refusals should cost
// the same as each other and as success.
func BenchmarkAuthenticate(b *testing.B) {
	s := newBenchServer(b)
	ctx := context.Background()
	rid, rsecret, err := s.srv.CreateKey(ctx, s.account, []string{ScopeSend}, nil, "revoked")
	if err != nil {
		b.Fatal(err)
	}
	if err := s.srv.RevokeKey(ctx, s.account, rid); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, token string }{
		{"valid", s.token},
		{"unknown", "sk_0123456789abcdefghij:" + rsecret},
		{"wrong", s.token[:24] + rsecret},
		{"revoked", rid + ":" + rsecret},
	} {
		b.Run(tc.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/", nil)
			req.Header.Set("Authorization", "Bearer "+tc.token)
			_, want := s.srv.api.authenticate(req) // warm the cache
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.srv.api.authenticate(req); (err == nil) != (want == nil) {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUnreadReceives: 100 clients of one account each receive 10
// messages of 1 MiB and do not read their answers; it reports the
// messages they leased and the server's live heap grown while they wait
// (Config.ReceiveBytes bounds both). It measures one such wave whatever
// b.N: run it with -benchtime 1x.
func BenchmarkUnreadReceives(b *testing.B) {
	const clients = 100
	e := newEnvWith(b, func(c *Config) { c.AnswerWriteTimeout = 10 * time.Minute })
	acct, tok := e.admin("")
	e.do(tok, "POST", "/v1/accounts/"+acct+"/queues", `{"name":"big","max_message_bytes":1048576}`).expect(201)
	sendLarge(b, e, acct, "big", 10*clients, 1<<20)
	n, heap := unreadReceives(b, e, clients, receiveText(acct, tok, `{"max_messages":10,"visibility_timeout_seconds":600}`),
		"SELECT count(*) FROM %s.messages WHERE receive_count > 0")
	b.ReportMetric(float64(n), "leased-MiB")
	b.ReportMetric(heap, "live-heap-MiB")
}

// unreadReceives sends request from clients stalled clients of e, waits
// until every receive has claimed or been refused (the count of messages
// they took, taken with %s for e's schema, has not moved for 15 s: a wave
// of claims reading 1 GB takes a few) and returns that count and the MiB
// of live heap grown meanwhile, timing only that.
func unreadReceives(b *testing.B, e *env, clients int, request, taken string) (int, float64) {
	count := func() (n int) {
		if err := e.srv.pool.QueryRow(b.Context(), fmt.Sprintf(taken, pgx.Identifier{e.srv.cfg.Schema}.Sanitize())).Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	}
	stalled := newStalledClients(b, e)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for range clients {
		stalled.send(request)
	}
	last, since := -1, time.Now()
	for time.Since(since) < 15*time.Second {
		time.Sleep(200 * time.Millisecond)
		if n := count(); n != last {
			last, since = n, time.Now()
		}
	}
	b.StopTimer()
	runtime.GC()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	return last, float64(int64(during.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
}

// BenchmarkUnreadDeleteReceives is BenchmarkUnreadReceives for receives
// with delete of messages larger than their claims hold: 100 clients of
// one account each receive with delete 10 messages whose headers hold
// 200 KiB (their queue's max_message_bytes, 1 KiB, bounds bodies only: a
// claim of 10 holds 640 KiB) and never read; it reports the MiB of
// messages deleted and the live heap grown while the clients wait.
func BenchmarkUnreadDeleteReceives(b *testing.B) {
	const clients = 100
	e := newEnvWith(b, func(c *Config) { c.AnswerWriteTimeout = 10 * time.Minute })
	acct, tok := e.admin("")
	e.do(tok, "POST", "/v1/accounts/"+acct+"/queues", `{"name":"big","max_message_bytes":1024}`).expect(201)
	headers := json.RawMessage(`{"h":"` + strings.Repeat("x", 200<<10-8) + `"}`)
	for sent := 0; sent < 10*clients; sent += 10 {
		ms := make([]pgqueue.NewMessage, 10)
		for i := range ms {
			ms[i] = pgqueue.NewMessage{Body: json.RawMessage(`1`), Headers: headers}
		}
		if _, err := e.srv.queue.SendBatch(b.Context(), acct, "big", ms); err != nil {
			b.Fatal(err)
		}
	}
	n, heap := unreadReceives(b, e, clients, receiveText(acct, tok, `{"max_messages":10,"delete":true}`),
		"SELECT "+strconv.Itoa(10*clients)+" - count(*) FROM %s.messages")
	b.ReportMetric(float64(n)*200/1024, "deleted-MiB")
	b.ReportMetric(heap, "live-heap-MiB")
}

// BenchmarkStatsReadsBeside: 16 clients of one account read the stats of
// its queue of 1,000,000 messages over and over (each read counts them
// all) while another account receives and deletes one message at a time;
// it reports that account's receives, their p99, and the stats reads
// answered and refused. It measures 10 s whatever b.N: run it with
// -benchtime 1x.
func BenchmarkStatsReadsBeside(b *testing.B) {
	e := newEnv(b)
	big, bigTok := e.admin("big")
	small, smallTok := e.admin("small")
	ctx := b.Context()
	schema := pgx.Identifier{e.srv.cfg.Schema}.Sanitize()
	if _, err := e.srv.pool.Exec(ctx, `INSERT INTO `+schema+`.messages (queue_id, visible_at, body)
		SELECT q.id, now(), '{"n":1}' FROM `+schema+`.queues q, generate_series(1, 1000000)
		 WHERE q.account = $1 AND q.name = 'big'`, big); err != nil {
		b.Fatal(err)
	}
	if _, err := e.srv.pool.Exec(ctx, `INSERT INTO `+schema+`.messages (queue_id, visible_at, body)
		SELECT q.id, now(), '{"n":1}' FROM `+schema+`.queues q, generate_series(1, 100000)
		 WHERE q.account = $1 AND q.name = 'small'`, small); err != nil {
		b.Fatal(err)
	}
	if _, err := e.srv.pool.Exec(ctx, "VACUUM ANALYZE "+schema+".messages"); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(e.srv.Handler())
	defer srv.Close()
	do := func(tok, method, path, body string) (int, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer res.Body.Close()
		out, err := io.ReadAll(res.Body)
		return res.StatusCode, out, err
	}
	b.ResetTimer()
	stop := time.Now().Add(10 * time.Second)
	var answered, refused atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				code, _, err := do(bigTok, "GET", "/v1/accounts/"+big+"/queues/big", "")
				switch {
				case err != nil:
					b.Error(err)
					return
				case code == 200:
					answered.Add(1)
				case code == 429:
					refused.Add(1)
					time.Sleep(time.Second) // as Retry-After asks
				default:
					b.Errorf("stats read: %d", code)
					return
				}
			}
		})
	}
	var ds []time.Duration
	start := time.Now()
	for time.Now().Before(stop) {
		t0 := time.Now()
		code, body, err := do(smallTok, "POST", "/"+small+"/small/messages/receive", `{"delete":true}`)
		if err != nil || code != 200 {
			b.Fatalf("receive beside the stats reads: %d %s %v", code, body, err)
		}
		ds = append(ds, time.Since(t0))
	}
	elapsed := time.Since(start)
	wg.Wait()
	b.StopTimer()
	slices.Sort(ds)
	b.ReportMetric(float64(len(ds))/elapsed.Seconds(), "receives/s")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, "receive-p99-ms")
	b.ReportMetric(float64(answered.Load())/elapsed.Seconds(), "stats/s")
	b.ReportMetric(float64(refused.Load()), "stats-429s")
}
