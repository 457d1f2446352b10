package reliability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/reliability"
)

// TestFifoGroupsAcrossProcessesWithKill: a fifo queue's messages, in 20
// groups, processed by two serve processes with trigger concurrency 8,
// batches of 10 and random failures (a message fails its first one or two
// attempts); one process is killed with SIGKILL mid-run and restarted.
// From the recorded executions: nothing is lost, each group's messages ran
// in send order, and no two messages of one group ever ran at once.
func TestFifoGroupsAcrossProcessesWithKill(t *testing.T) {
	t.Parallel()
	const visibility = 5 * time.Second
	const groups = 20
	perGroup := reliability.Size(15, 60)
	env := reliability.NewEnv(t, fmt.Sprintf(`
queues:
  work: {fifo: true, visibility_timeout_seconds: %d, max_receive_count: 100}
functions:
  record: {build: ./record, reactor: true, timeout: 10s, env: {RECORD_SLEEP_MS: "20"}}
triggers:
  - {queue: work, function: record, batch_size: 10, concurrency: 8, backoff: {initial: 50ms, max: 200ms}}
`, int(visibility.Seconds())), reliability.EnvOptions{})
	ctx := context.Background()
	q, err := env.Queue.GetQueue(ctx, pgqueue.DefaultAccount, "work")
	if err != nil || !q.Settings.Fifo {
		t.Fatalf("the manifest's fifo: true did not reach the queue: %+v, %v", q.Settings, err)
	}
	if _, err := env.Queue.Send(ctx, pgqueue.DefaultAccount, "work", pgqueue.NewMessage{Body: json.RawMessage(`{}`)}); err == nil ||
		!strings.Contains(err.Error(), "group") {
		t.Fatalf("a send without a group to the fifo queue: %v, want a refusal naming the group", err)
	}

	nodes := map[string]*reliability.Node{"a": env.StartNode("a"), "b": env.StartNode("b")}
	rng := rand.New(rand.NewPCG(17, 1))
	sent := map[string][]int64{}
	var all []int64
	failing := 0
	// Sends in rounds: each round adds a few messages to every group, so
	// the kill lands while every group has work in flight.
	rounds := 5
	for r := range rounds {
		var ms []pgqueue.NewMessage
		for g := range groups {
			for range perGroup / rounds {
				body := `{}`
				if rng.IntN(100) < 15 {
					body = fmt.Sprintf(`{"fail_until": %d}`, 1+rng.IntN(2))
					failing++
				}
				ms = append(ms, pgqueue.NewMessage{Body: json.RawMessage(body), Group: fmt.Sprintf("g%02d", g)})
			}
		}
		seqs, err := env.Queue.SendBatch(ctx, pgqueue.DefaultAccount, "work", ms)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range ms {
			sent[m.Group] = append(sent[m.Group], seqs[i])
		}
		all = append(all, seqs...)
		if r == 2 {
			time.Sleep(500 * time.Millisecond)
			nodes["a"].Kill()
			nodes["a"] = env.StartNode("a")
		}
		time.Sleep(300 * time.Millisecond)
	}
	lastKill := env.Kills()
	// Each group runs one message at a time: allow every message of the
	// longest group a generous round trip, plus the killed leases' expiry.
	budget := visibility + 30*time.Second + time.Duration(perGroup*3)*time.Second/2
	if _, err := env.WaitDrained(ctx, "work", budget); err != nil {
		t.Fatalf("queue did not drain: %v", err)
	}
	for name, n := range nodes {
		if code, _ := n.Term(30 * time.Second); code != 0 {
			t.Errorf("node %s: exit %d after SIGTERM, want 0", name, code)
		}
	}
	logs, err := env.ReadLogs()
	if err != nil {
		t.Fatal(err)
	}
	v := reliability.Check(all, logs, "work", reliability.CheckOptions{Kills: env.Kills()})
	if err := v.Err(); err != nil {
		t.Errorf("broken promises:\n%v", err)
	}
	problems := reliability.CheckGroups(logs, "queue:work", sent, env.Kills())
	for i, p := range problems {
		if i == 20 {
			t.Errorf("… and %d more", len(problems)-20)
			break
		}
		t.Error(p)
	}
	retried := 0
	for _, xs := range logs.For("queue:work") {
		if len(xs) > 1 {
			retried++
		}
	}
	if retried < failing {
		t.Errorf("%d messages ran more than once, want at least the %d set to fail first", retried, failing)
	}
	t.Logf("fifo: %d messages in %d groups, 2 nodes (concurrency 8 each), %d set to fail first, %d SIGKILL: %s; %d ran more than once; group check: %d problems",
		len(all), groups, failing, len(lastKill), v, retried, len(problems))
}
