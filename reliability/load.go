package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
)

// SendN sends n messages to queue in batches through the Go API and
// returns the acknowledged sequences. body(i) is message i's body (nil:
// {"i": i}).
func SendN(ctx context.Context, q *pgqueue.Client, queue string, n, batch int, body func(i int) json.RawMessage) ([]int64, error) {
	seqs := make([]int64, 0, n)
	for i := 0; i < n; i += batch {
		ms := make([]pgqueue.NewMessage, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			b := json.RawMessage(fmt.Sprintf(`{"i":%d}`, j))
			if body != nil {
				b = body(j)
			}
			ms = append(ms, pgqueue.NewMessage{Body: b})
		}
		got, err := q.SendBatch(ctx, pgqueue.DefaultAccount, queue, ms)
		if err != nil {
			return seqs, fmt.Errorf("send batch at message %d of %d to %s: %w", i, n, queue, err)
		}
		seqs = append(seqs, got...)
	}
	return seqs, nil
}

// SendResult is one send attempt of a Load.
type SendResult struct {
	At, Done time.Time
	// Seqs are the sequences of an acknowledged send; Err is a refusal.
	Seqs []int64
	Err  error
}

// Load sends at a steady rate until stopped, recording every attempt.
type Load struct {
	mu      sync.Mutex
	results []SendResult
	cancel  context.CancelFunc
	done    chan struct{}
}

// StartLoad calls send every interval (one caller at a time per worker,
// workers of them) until Stop.
func StartLoad(ctx context.Context, workers int, interval time.Duration, send func(ctx context.Context) ([]int64, error)) *Load {
	ctx, cancel := context.WithCancel(ctx)
	l := &Load{cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread the workers over the interval.
			next := time.Now().Add(interval * time.Duration(w) / time.Duration(workers))
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Until(next)):
				}
				next = next.Add(interval)
				if time.Until(next) < -interval {
					next = time.Now() // fell behind: do not burst to catch up
				}
				// A send under way when Stop comes runs to its end: its
				// outcome (maybe a committed message) must be recorded.
				r := SendResult{At: time.Now()}
				sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				r.Seqs, r.Err = send(sctx)
				scancel()
				r.Done = time.Now()
				l.mu.Lock()
				l.results = append(l.results, r)
				l.mu.Unlock()
			}
		}()
	}
	go func() { wg.Wait(); close(l.done) }()
	return l
}

// Stop stops sending and returns every attempt.
func (l *Load) Stop() []SendResult {
	l.cancel()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.results
}

// Results returns the attempts so far.
func (l *Load) Results() []SendResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]SendResult(nil), l.results...)
}

// Acked returns the sequences of every acknowledged send.
func Acked(rs []SendResult) []int64 {
	var out []int64
	for _, r := range rs {
		if r.Err == nil {
			out = append(out, r.Seqs...)
		}
	}
	return out
}

// Failed counts the refused sends.
func Failed(rs []SendResult) int {
	n := 0
	for _, r := range rs {
		if r.Err != nil {
			n++
		}
	}
	return n
}

// Peak samples f every interval in the background until the returned stop
// is called, which returns the highest value seen (f's errors skip a
// sample).
func Peak(interval time.Duration, f func(ctx context.Context) (int64, error)) (stop func() int64) {
	ctx, cancel := context.WithCancel(context.Background())
	var peak atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if v, err := f(ctx); err == nil && v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-ctx.Done():
			case <-time.After(interval):
			}
		}
	}()
	return func() int64 {
		cancel()
		<-done
		return peak.Load()
	}
}
