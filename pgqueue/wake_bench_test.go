package pgqueue_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
)

// BenchmarkSendToClaim takes apart the path from a send to the claim of
// its message by a process waiting on the queue, as a trigger's dispatcher
// does: the send (its statement and its commit), the wake-up the commit's
// NOTIFY gives the Listener, and the claim (ReceivePending) until its rows
// arrive, then until its own commit. One message at a time, on a queue
// otherwise empty; each iteration acks its message. It reports the
// percentiles of each step and of created_at (the send's transaction
// start, what send-to-start latency counts from) to the claim's rows.
//
// The sender commits durably (as every Sluice client does) or, in
// sender=async, with synchronous_commit off for its session: the
// difference is the send's flush to disk. Messages follow each other at
// once, or in gap=2ms with the pause between them that 500 messages a
// second leave, time for the processes on the path to go idle. Run with
//
//	go test ./pgqueue -run '^$' -bench SendToClaim -benchtime 2000x
func BenchmarkSendToClaim(b *testing.B) {
	e := benchSetup(b)
	ctx := context.Background()
	name := "wake_claim"
	benchQueue(b, e, name, 0)
	listener, err := pgqueue.NewListener(e.c.Pool(), pgqueue.ListenerOptions{Schema: e.schema})
	if err != nil {
		b.Fatal(err)
	}
	if err := listener.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer listener.Stop(context.WithoutCancel(ctx)) //nolint:errcheck // the benchmark's figures are what it reports
	sub, err := listener.Subscribe(ctx, acct, name)
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()

	for _, run := range []struct {
		mode string
		gap  time.Duration
	}{{"durable", 0}, {"async", 0}, {"durable", 2 * time.Millisecond}} {
		b.Run(fmt.Sprintf("sender=%s/gap=%s", run.mode, run.gap), func(b *testing.B) {
			sender := e.c
			if run.mode == "async" {
				if sender, err = pgqueue.New(pgtest.AsyncCommitPool(b, e.c.Pool()), pgqueue.Options{Schema: e.schema}); err != nil {
					b.Fatal(err)
				}
			}
			sendToClaim(b, e.c, sender, sub, name, run.gap)
		})
	}
}

// sendToClaim runs b.N sends of one message by sender, each claimed by
// receiver once sub wakes, and reports the steps' percentiles.
func sendToClaim(b *testing.B, receiver, sender *pgqueue.Client, sub *pgqueue.Subscription, queue string, gap time.Duration) {
	ctx := context.Background()
	body := []pgqueue.NewMessage{{Body: benchBody}}
	opts := pgqueue.ReceiveOptions{Max: 10, VisibilityTimeout: time.Minute}
	steps := map[string][]time.Duration{}
	note := func(step string, d time.Duration) { steps[step] = append(steps[step], d) }
	// A wake-up left over from an earlier run is not this run's.
	select {
	case <-sub.C():
	default:
	}
	b.ResetTimer()
	for range b.N {
		time.Sleep(gap)
		began := time.Now()
		if _, err := sender.SendBatch(ctx, acct, queue, body); err != nil {
			b.Fatal(err)
		}
		sent := time.Now()
		select {
		case <-sub.C():
		case <-time.After(10 * time.Second):
			b.Fatal("no wake-up 10 s after the send")
		}
		woken := time.Now()
		claim, err := receiver.ReceivePending(ctx, acct, queue, opts)
		if err != nil {
			b.Fatal(err)
		}
		rows := time.Now()
		if err := claim.Wait(); err != nil {
			b.Fatal(err)
		}
		committed := time.Now()
		if len(claim.Messages) != 1 {
			b.Fatalf("claimed %d messages, want the one sent", len(claim.Messages))
		}
		note("send", sent.Sub(began))
		note("wake", woken.Sub(sent))
		note("claim-rows", rows.Sub(woken))
		note("claim-commit", committed.Sub(rows))
		note("created-to-rows", rows.Sub(claim.Messages[0].CreatedAt))
		if _, err := receiver.Ack(ctx, acct, queue, pgqueue.Leases(claim.Messages)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	for step, ds := range steps {
		slices.Sort(ds)
		for _, p := range []int{50, 99} {
			b.ReportMetric(float64(ds[(len(ds)-1)*p/100].Microseconds()), fmt.Sprintf("%s-p%d-us", step, p))
		}
	}
}
