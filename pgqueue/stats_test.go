package pgqueue_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
)

// awayFromMinuteEnd waits, when a minute is about to end, until the next
// one starts, so a test's steps land in one minute.
func awayFromMinuteEnd() {
	if s := time.Now().Second(); s >= 55 {
		time.Sleep(time.Duration(61-s) * time.Second)
	}
}

func ptr(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestMinuteStats(t *testing.T) {
	t.Parallel()
	awayFromMinuteEnd()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{MaxReceiveCount: 1})
	e.queue("other", pgqueue.Settings{})
	sw := e.startSweeper(pgqueue.SweeperOptions{Interval: time.Hour}) // sweeps only when asked

	seqs := e.sendN("q", 6)
	e.send("q", `{"one":1}`)
	e.send("other", `{"elsewhere":1}`)
	got := e.receive("q", pgqueue.ReceiveOptions{Max: 3, VisibilityTimeout: time.Second})
	if _, err := e.c.Ack(e.ctx, acct, "q", []pgqueue.Ack{{Sequence: got[0].Sequence, Receipt: got[0].Receipt}}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(e.ctx, acct, "q", got[1].Sequence, got[1].Receipt); err != nil {
		t.Fatal(err)
	}
	// A repeated ack deletes nothing and counts nothing.
	if _, err := e.c.Ack(e.ctx, acct, "q", []pgqueue.Ack{{Sequence: got[0].Sequence}}); err != nil {
		t.Fatal(err)
	}
	// Two DLQ moves: one failed at once, one whose only lease expired.
	e.fail("q", []int64{seqs[5]})
	waitPast(got[2].VisibleAt)
	if n := e.sweep(); n != 1 {
		t.Fatalf("sweep moved %d, want 1", n)
	}
	if err := sw.RecordStats(e.ctx); err != nil {
		t.Fatal(err)
	}

	ms, err := e.c.MinuteStats(e.ctx, acct, "q", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 {
		t.Fatalf("%d minutes, want 3", len(ms))
	}
	for i, m := range ms {
		if m.Minute.Location() != time.UTC || m.Minute.Second() != 0 || m.Minute.Nanosecond() != 0 {
			t.Errorf("minute %d: %v is not the start of a UTC minute", i, m.Minute)
		}
		if i > 0 && !m.Minute.Equal(ms[i-1].Minute.Add(time.Minute)) {
			t.Errorf("minute %d: %v does not follow %v", i, m.Minute, ms[i-1].Minute)
		}
	}
	now := ms[2]
	if d := time.Since(now.Minute); d < 0 || d > 2*time.Minute {
		t.Errorf("last minute %v is not the current one", now.Minute)
	}
	if now.Sends != 7 || now.Acks != 2 || now.DLQMoves != 2 {
		t.Errorf("counts: sends %d acks %d dlq_moves %d, want 7 2 2", now.Sends, now.Acks, now.DLQMoves)
	}
	if ptr(now.Ready) != int64(3) || ptr(now.Inflight) != int64(0) || ptr(now.Delayed) != int64(0) || ptr(now.DLQ) != int64(2) {
		t.Errorf("depth: ready %v inflight %v delayed %v dlq %v, want 3 0 0 2", ptr(now.Ready), ptr(now.Inflight), ptr(now.Delayed), ptr(now.DLQ))
	}
	for _, old := range ms[:2] {
		if old.Sends != 0 || old.Acks != 0 || old.DLQMoves != 0 || old.Ready != nil || old.DLQ != nil {
			t.Errorf("minute %v before the queue existed: %+v", old.Minute, old)
		}
	}
	if o, err := e.c.MinuteStats(e.ctx, acct, "other", 1); err != nil || len(o) != 1 || o[0].Sends != 1 || ptr(o[0].Ready) != int64(1) {
		t.Errorf("other queue: %+v %v", o, err)
	}

	// Counts made after the flush are added, not replaced.
	e.send("q", `{"more":1}`)
	if err := sw.RecordStats(e.ctx); err != nil {
		t.Fatal(err)
	}
	if ms, _ := e.c.MinuteStats(e.ctx, acct, "q", 1); len(ms) != 1 || ms[0].Sends != 8 || ptr(ms[0].Ready) != int64(4) {
		t.Errorf("after one more send: %+v", ms)
	}

	for _, n := range []int{0, -1, 1441} {
		if _, err := e.c.MinuteStats(e.ctx, acct, "q", n); !errors.Is(err, pgqueue.ErrInvalidArgument) || !strings.Contains(err.Error(), "1 to 1440") {
			t.Errorf("minutes %d: %v", n, err)
		}
	}
	if _, err := e.c.MinuteStats(e.ctx, acct, "nope", 5); !errors.Is(err, pgqueue.ErrQueueNotFound) {
		t.Errorf("unknown queue: %v", err)
	}
	if ms, err := e.c.MinuteStats(e.ctx, acct, "q", 1440); err != nil || len(ms) != 1440 {
		t.Errorf("a day: %d minutes, %v", len(ms), err)
	}
}

func TestMinuteStatsCountOnlyWhileASweeperRuns(t *testing.T) {
	t.Parallel()
	awayFromMinuteEnd()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	e.send("q", `{"before":1}`)                                       // no sweeper yet: not counted
	sw := e.startSweeper(pgqueue.SweeperOptions{Interval: time.Hour}) // sweeps only when asked
	// The sweeper samples the depth when it starts, the first in this
	// minute.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ms, err := e.c.MinuteStats(e.ctx, acct, "q", 1)
		if err != nil {
			t.Fatal(err)
		}
		if ms[0].Ready != nil {
			if *ms[0].Ready != 1 {
				t.Errorf("depth sampled at start: ready %d, want 1", *ms[0].Ready)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no depth sample 5s after the sweeper started")
		}
	}
	e.send("q", `{"during":1}`)
	if err := sw.Stop(e.ctx); err != nil { // Stop stores what was counted
		t.Fatal(err)
	}
	e.send("q", `{"after":1}`) // stopped: not counted
	ms, err := e.c.MinuteStats(e.ctx, acct, "q", 1)
	if err != nil || len(ms) != 1 || ms[0].Sends != 1 || ptr(ms[0].Ready) != int64(1) {
		t.Fatalf("minute stats %+v %v, want 1 send and the first sample", ms, err)
	}
}
