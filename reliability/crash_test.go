package reliability_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/reliability"
)

// TestCrashMidBatch: messages processed by 3 serve processes, one killed
// with SIGKILL every few seconds (and restarted). Nothing may be lost, a
// duplicate may only follow a delivery without a committed ack, no lease is
// held twice, the queue drains within the visibility timeout + 30 s of the
// last kill, and a cron trigger fires each tick once across the nodes.
func TestCrashMidBatch(t *testing.T) {
	t.Parallel()
	const visibility = 5 * time.Second
	messages := reliability.Size(1000, 10000)
	kills := reliability.Size(3, 12)
	every := reliability.Size(2*time.Second, 3*time.Second)
	sleepMS := reliability.Size(300, 100)
	env := reliability.NewEnv(t, fmt.Sprintf(`
queues:
  work: {visibility_timeout_seconds: %d, max_receive_count: 100}
functions:
  record: {build: ./record, reactor: true, timeout: 10s, env: {RECORD_SLEEP_MS: "%d"}}
triggers:
  - {queue: work, function: record, batch_size: 10, concurrency: 2}
  - {name: tick, cron: "* * * * * *", function: record}
`, int(visibility.Seconds()), sleepMS), reliability.EnvOptions{})
	ctx := context.Background()

	names := []string{"a", "b", "c"}
	nodes := map[string]*reliability.Node{}
	for _, name := range names {
		nodes[name] = env.StartNode(name)
	}
	// The sends are spread over the kills, so every kill hits batches in
	// flight.
	ticks := int(time.Duration(kills) * every / (100 * time.Millisecond))
	perTick := (messages + ticks - 1) / ticks
	var sent []int64
	sending := make(chan error, 1)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for len(sent) < messages {
			seqs, err := reliability.SendN(ctx, env.Queue, "work", min(perTick, messages-len(sent)), perTick, nil)
			sent = append(sent, seqs...)
			if err != nil {
				sending <- err
				return
			}
			<-tick.C
		}
		sending <- nil
	}()
	var lastKill time.Time
	// Kills on a fixed schedule (restarts take time of their own).
	begin := time.Now()
	for k := range kills {
		time.Sleep(time.Until(begin.Add(time.Duration(k+1) * every)))
		name := names[k%len(names)]
		nodes[name].Kill()
		lastKill = time.Now()
		nodes[name] = env.StartNode(name)
	}
	if err := <-sending; err != nil {
		t.Fatal(err)
	}
	drain, err := env.WaitDrained(ctx, "work", visibility+30*time.Second-time.Since(lastKill))
	drainAfterKill := time.Since(lastKill)
	if err != nil {
		t.Errorf("queue did not drain within the visibility timeout + 30s of the last kill: %v", err)
	}
	// Let the cron run a little more with every node up, then stop them.
	time.Sleep(1500 * time.Millisecond)
	ended := time.Now()
	for _, name := range names {
		if code, _ := nodes[name].Term(30 * time.Second); code != 0 {
			t.Errorf("node %s: exit %d after SIGTERM, want 0", name, code)
		}
	}

	logs, err := env.ReadLogs()
	if err != nil {
		t.Fatal(err)
	}
	v := reliability.Check(sent, logs, "work", reliability.CheckOptions{Kills: env.Kills()})
	killed := env.Kills()
	cut := map[string]bool{}
	for _, x := range logs.Execs {
		if _, ok := killed[x.Log]; ok && x.EndMS == 0 {
			cut[x.Log] = true
		}
	}
	t.Logf("crash mid-batch: %d messages, 3 nodes, %d SIGKILLs every %s (%d cut a batch short), visibility %s: %s; drained %.1fs after the last kill (waited %.1fs)",
		messages, kills, every, len(cut), visibility, v, drainAfterKill.Seconds(), drain.Seconds())
	if err := v.Err(); err != nil {
		t.Errorf("broken promises:\n%v", err)
	}
	checkCronOnce(t, env, logs, ended)
}

// checkCronOnce checks that the cron trigger "tick" (every second) fired
// each scheduled second at most once, and that every second claimed by a
// process that was not killed right then ran.
func checkCronOnce(t *testing.T, env *reliability.Env, logs *reliability.Logs, ended time.Time) {
	t.Helper()
	runs := logs.For("tick")
	rows, err := env.Pool.Query(context.Background(),
		`SELECT extract(epoch FROM k.scheduled_time)::bigint, k.claimed_by FROM `+env.Schema+`.cron_ticks k
		 JOIN `+env.Schema+`.triggers t ON t.id = k.trigger_id WHERE t.name = 'tick' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	claims := map[int64]string{}
	var secs []int64
	for rows.Next() {
		var at int64
		var by string
		if err := rows.Scan(&at, &by); err != nil {
			t.Fatal(err)
		}
		claims[at] = by
		secs = append(secs, at)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// Which pid each log file belongs to, and whether it was killed.
	killedPids := map[string]bool{}
	kills := env.Kills()
	for _, n := range env.Nodes() {
		if _, ok := kills[n.Log]; ok {
			killedPids[strconv.Itoa(n.Pid())] = true
		}
	}
	twice, missing, lostWithNode := 0, 0, 0
	for id, xs := range runs {
		if len(xs) > 1 {
			twice++
			t.Errorf("cron tick %d ran %d times", id, len(xs))
		}
	}
	sort.Slice(secs, func(i, j int) bool { return secs[i] < secs[j] })
	for _, at := range secs {
		if len(runs[at]) > 0 || at >= ended.Unix()-1 {
			continue
		}
		by := claims[at]
		pid := by[len(by)-len(lastField(by)):]
		if killedPids[pid] {
			lostWithNode++ // claimed, then its process was killed before it ran or logged it
			continue
		}
		missing++
		t.Errorf("cron tick %d claimed by %s (not killed) but never ran", at, by)
	}
	// With two of three nodes up at any time, no second goes unclaimed.
	gaps := 0
	for i := 1; i < len(secs); i++ {
		if d := secs[i] - secs[i-1]; d > 1 {
			gaps += int(d - 1)
			t.Errorf("cron: no node claimed the %d tick(s) after %d", d-1, secs[i-1])
		}
	}
	t.Logf("cron every second on 3 nodes: %d ticks claimed, %d ran, %d ran twice, %d claimed by a node killed before running it, %d claimed but not run, %d seconds with no claim",
		len(secs), len(runs), twice, lostWithNode, missing, gaps)
}

func lastField(s string) string {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ':' {
			return s[i+1:]
		}
	}
	return s
}
