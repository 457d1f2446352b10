package triggers_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/triggers"
)

// A graceful stop under load leaves nothing leased: the engine is started
// and stopped 50 times while messages keep arriving, and after each Stop no
// message may be in flight (no other engine runs, so a lease still held
// would be one the stopped engine walked away from, to wait out the 60 s
// visibility timeout). Stops land at random points: while claiming, while
// batches run, while settling.
func TestStopUnderLoadLeavesNothingLeased(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("slow", "slow", functions.Config{Env: map[string]string{"SLOW_DURATION": "15ms"}})
	e.createQueue("stops", pgqueue.Settings{VisibilityTimeout: 60 * time.Second})
	e.putTrigger(triggers.Trigger{Queue: "stops", Function: "slow", BatchSize: 5, Concurrency: 2})

	ctx := context.Background()
	listener, err := pgqueue.NewListener(e.pool, pgqueue.ListenerOptions{Schema: e.schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := listener.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer listener.Stop(ctx)
	qc, err := pgqueue.New(e.pool, pgqueue.Options{Schema: e.schema, Listener: listener})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: cacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	// Every round's engine loads the same module into rt. Holding it
	// loaded here keeps its compiled code in rt between rounds, so each
	// engine start finds it instead of rewriting and decoding the multi-MB
	// module again (seconds under -race, ×50 rounds); the stops are the
	// same.
	path, err := wasmbuild.Build(ctx, "slow", wasmbuild.Reactor)
	if err != nil {
		t.Fatal(err)
	}
	module, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	held, err := rt.Load(ctx, module, runtime.FunctionConfig{Name: "slow", Version: 1, MemoryMiB: functions.DefaultMemoryMiB})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close(ctx)

	// A steady 200 messages/s from a separate client, until the test ends.
	sendCtx, stopSending := context.WithCancel(ctx)
	var sending sync.WaitGroup
	sending.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-sendCtx.Done():
				return
			case <-tick.C:
				if _, err := e.queue.Send(sendCtx, acct, "stops", pgqueue.NewMessage{Body: json.RawMessage(`{}`)}); err != nil && sendCtx.Err() == nil {
					t.Errorf("send: %v", err)
					return
				}
			}
		}
	})
	defer func() { stopSending(); sending.Wait() }()

	const rounds = 50
	for round := 1; round <= rounds; round++ {
		eng, err := triggers.NewEngine(triggers.Config{
			Pool: e.pool, Schema: e.schema, Queue: qc, Listener: listener, Registry: e.registry, Runtime: rt,
			Logger:         zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
			ReloadInterval: 200 * time.Millisecond, PollMin: 5 * time.Millisecond, PollMax: 50 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := eng.Start(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(20+rand.IntN(200)) * time.Millisecond)
		// Half the stops let batches finish; the others cut them short.
		grace := 10 * time.Second
		if round%2 == 0 {
			grace = time.Duration(rand.IntN(15)) * time.Millisecond
		}
		stopCtx, cancel := context.WithTimeout(ctx, grace)
		_ = eng.Stop(stopCtx) // a cut-short stop says so; what matters is what it left
		cancel()
		if n := e.scalar(`SELECT count(*) FROM {{schema}}.messages WHERE receive_count > 0 AND visible_at > now()`); n != 0 {
			t.Fatalf("round %d (grace %s): %d messages left leased after Stop returned, want 0", round, grace, n)
		}
	}
	if n := e.scalar(`SELECT coalesce(sum(acked), 0) FROM {{schema}}.invocations`); n == 0 {
		t.Fatalf("no message was processed in %d rounds; the test stopped nothing under load", rounds)
	}
}
