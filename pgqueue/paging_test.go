package pgqueue_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/pgqueue"
)

// sendN sends n messages to queue in batches and returns their sequences.
func (e *env) sendN(queue string, n int) []int64 {
	e.t.Helper()
	var all []int64
	for len(all) < n {
		ms := make([]pgqueue.NewMessage, min(n-len(all), 1000))
		for i := range ms {
			ms[i] = pgqueue.NewMessage{Body: body(len(all) + i)}
		}
		s, err := e.c.SendBatch(e.ctx, acct, queue, ms)
		if err != nil {
			e.t.Fatal(err)
		}
		all = append(all, s...)
	}
	return all
}

// pages reads pages of size max with page for as long as one says more
// follow and returns every sequence seen, checking each page is in order
// and that only a full page without more is short.
func pages(t *testing.T, max int, page func(after int64) ([]int64, bool, error)) []int64 {
	t.Helper()
	var all []int64
	after := int64(0)
	for {
		got, more, err := page(after)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.IsSorted(got) || len(got) > max || len(got) > 0 && got[0] <= after {
			t.Fatalf("page after %d: %v", after, got)
		}
		if len(got) == max && !more {
			t.Fatalf("full page after %d without more", after)
		}
		all = append(all, got...)
		if !more {
			return all
		}
		after = got[len(got)-1]
	}
}

func TestPeekAfterPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	sent := e.sendN("q", 250)
	// A received message is not ready, so no page shows it.
	got := e.receive("q", pgqueue.ReceiveOptions{Max: 1})
	want := slices.DeleteFunc(slices.Clone(sent), func(s int64) bool { return s == got[0].Sequence })
	seen := pages(t, 100, func(after int64) ([]int64, bool, error) {
		ms, more, err := e.c.PeekAfter(e.ctx, acct, "q", after, 100)
		for _, m := range ms {
			if !m.Receipt.IsZero() {
				t.Fatalf("peeked message %d has a receipt", m.Sequence)
			}
		}
		return seqs(ms), more, err
	})
	if !slices.Equal(seen, want) {
		t.Fatalf("paged %d messages, want %d: %v", len(seen), len(want), seen)
	}
	if ms, more, err := e.c.PeekAfter(e.ctx, acct, "q", sent[len(sent)-1], 10); err != nil || len(ms) != 0 || more {
		t.Fatalf("after the last: %v, more %v, %v", ms, more, err)
	}
	for _, bad := range []struct {
		after int64
		max   int
	}{{-1, 10}, {0, 0}, {0, 1001}} {
		if _, _, err := e.c.PeekAfter(e.ctx, acct, "q", bad.after, bad.max); !errors.Is(err, pgqueue.ErrInvalidArgument) {
			t.Errorf("PeekAfter(%d, %d): %v, want ErrInvalidArgument", bad.after, bad.max, err)
		}
	}
	if _, _, err := e.c.PeekAfter(e.ctx, acct, "nope", 0, 10); !errors.Is(err, pgqueue.ErrQueueNotFound) {
		t.Errorf("unknown queue: %v", err)
	}
}

// fail moves the messages with the given sequences to the DLQ.
func (e *env) fail(queue string, sequences []int64) {
	e.t.Helper()
	fs := make([]pgqueue.Failure, len(sequences))
	for i, s := range sequences {
		fs[i] = pgqueue.Failure{Sequence: s}
	}
	if moved, err := e.c.Fail(e.ctx, acct, queue, fs); err != nil || len(moved) != len(fs) {
		e.t.Fatalf("fail %d messages: moved %d, %v", len(fs), len(moved), err)
	}
}

func TestDLQPagesAndRedriveSequences(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	sent := e.sendN("q", 230)
	// Fail them newest first, so failure order is not sequence order.
	rev := slices.Clone(sent)
	slices.Reverse(rev)
	e.fail("q", rev[:100])
	e.fail("q", rev[100:])
	dlqPage := func(after int64) ([]int64, bool, error) {
		ds, more, err := e.c.ReceiveDLQAfter(e.ctx, acct, "q", after, 100)
		out := make([]int64, len(ds))
		for i, d := range ds {
			out[i] = d.Sequence
		}
		return out, more, err
	}
	if seen := pages(t, 100, dlqPage); !slices.Equal(seen, sent) {
		t.Fatalf("paged %d dead letters, want %d", len(seen), len(sent))
	}

	// Two dead letters, one repeated, one message that is not in the DLQ
	// and one sequence that never existed: two move.
	if _, err := e.c.RedriveSequences(e.ctx, acct, "q", []int64{sent[3]}); err != nil {
		t.Fatal(err)
	}
	n, err := e.c.RedriveSequences(e.ctx, acct, "q", []int64{sent[5], sent[7], sent[5], sent[3], sent[len(sent)-1] + 1000})
	if err != nil || n != 2 {
		t.Fatalf("redrive: %d %v, want 2", n, err)
	}
	ready, _, err := e.c.PeekAfter(e.ctx, acct, "q", 0, 10)
	if err != nil || !slices.Equal(seqs(ready), []int64{sent[3], sent[5], sent[7]}) {
		t.Fatalf("ready after redrive: %v %v", seqs(ready), err)
	}
	if s := e.stats("q"); s.DLQ != int64(len(sent)-3) {
		t.Fatalf("dlq %d, want %d", s.DLQ, len(sent)-3)
	}
	for _, bad := range [][]int64{nil, {}, make([]int64, 1001)} {
		if _, err := e.c.RedriveSequences(e.ctx, acct, "q", bad); !errors.Is(err, pgqueue.ErrInvalidArgument) {
			t.Errorf("redrive %d sequences: %v, want ErrInvalidArgument", len(bad), err)
		}
	}
	if _, _, err := e.c.ReceiveDLQAfter(e.ctx, acct, "q", -1, 10); !errors.Is(err, pgqueue.ErrInvalidArgument) {
		t.Errorf("negative after: %v", err)
	}
}

// A page holds at most MaxPageBytes past its first message: pages of
// large messages are cut short, say that more follow, and together hold
// every message once.
func TestPagesAreCutByBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{MaxMessageBytes: 1 << 20})
	const size = 600 << 10
	big := json.RawMessage(`"` + strings.Repeat("x", size-2) + `"`)
	var sent []int64
	for range 20 {
		s, err := e.c.SendBatch(e.ctx, acct, "q", []pgqueue.NewMessage{{Body: big}})
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, s...)
	}
	perPage := pgqueue.MaxPageBytes / size
	first, more, err := e.c.PeekAfter(e.ctx, acct, "q", 0, 100)
	if err != nil || len(first) != perPage || !more {
		t.Fatalf("first page of 600 KiB messages: %d messages, more %v, %v; want %d (%d bytes) and more", len(first), more, err, perPage, pgqueue.MaxPageBytes)
	}
	peekPage := func(after int64) ([]int64, bool, error) {
		ms, more, err := e.c.PeekAfter(e.ctx, acct, "q", after, 100)
		if len(ms) > perPage {
			t.Fatalf("page after %d holds %d messages of 600 KiB", after, len(ms))
		}
		return seqs(ms), more, err
	}
	if seen := pages(t, 100, peekPage); !slices.Equal(seen, sent) {
		t.Fatalf("paged %v, want %v", seen, sent)
	}
	e.fail("q", sent)
	dlqPage := func(after int64) ([]int64, bool, error) {
		ds, more, err := e.c.ReceiveDLQAfter(e.ctx, acct, "q", after, 100)
		if len(ds) > perPage {
			t.Fatalf("DLQ page after %d holds %d dead letters of 600 KiB", after, len(ds))
		}
		out := make([]int64, len(ds))
		for i, d := range ds {
			out[i] = d.Sequence
		}
		return out, more, err
	}
	if seen := pages(t, 100, dlqPage); !slices.Equal(seen, sent) {
		t.Fatalf("paged the DLQ %v, want %v", seen, sent)
	}
}
