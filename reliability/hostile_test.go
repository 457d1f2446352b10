package reliability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/reliability"
)

// TestHostileFunctions: an infinite loop, a deep recursion, a memory bomb,
// endless stdout and a trap, all at once, while a healthy function serves
// a steady load. Each hostile batch must fail within its limits with the
// right failure kind; the healthy function's p99 send-to-function latency
// must stay within 2× its baseline (asserted by the full suite; the short
// one reports it); the server's memory must stay bounded.
func TestHostileFunctions(t *testing.T) {
	// Not parallel: it runs alone, before the parallel scenarios, whose
	// load would skew the latency ratio and starve the deprioritized
	// hostile guests of the CPU they need to reach their limits.
	const concurrency = 5
	rounds := reliability.Size(1, 3)
	// The hostile function is confined to the long slots, so its batches
	// take turns with the loops on one core, on a thread of lowered
	// priority where the process may lower it. The short suite runs on
	// machines of unknown speed and load (CI): there a smaller memory bomb,
	// with more time, reaches its memory limit before its timeout with a
	// wide margin.
	timeout := reliability.Size(6*time.Second, 2*time.Second)
	memoryMiB := reliability.Size(8, 32)
	phase := reliability.Size(6*time.Second, 20*time.Second)
	env := reliability.NewEnv(t, fmt.Sprintf(`
queues:
  healthy: {max_receive_count: 5}
  hostile: {max_receive_count: 2}
functions:
  record: {build: ./record, reactor: true}
  hostile: {build: ../runtime/testdata/hostile, reactor: false, memory_mb: %d, timeout: %s}
triggers:
  - {queue: healthy, function: record, batch_size: 1, concurrency: 2}
  - {queue: hostile, function: hostile, batch_size: 1, concurrency: %d, backoff: {initial: 100ms, max: 200ms}}
`, memoryMiB, timeout, concurrency), reliability.EnvOptions{})
	ctx := context.Background()
	// The full suite holds the healthy p99 to 2× its baseline with
	// Postgres on the same cores, so it runs serve as an operator there
	// should (docs/function-abi.md, "Long-running guests and the CPU"):
	// long guests in a cgroup marked idle, since a thread's nice value
	// does not act against Postgres across the kernel's scheduling groups.
	// The short suite (CI, a loaded machine) keeps nice alone, where an
	// idle guest could be starved past its timeout before it reached its
	// memory limit.
	var flags []string
	if reliability.Full() {
		dir, whyNot := reliability.IdleCgroup(t)
		if dir == "" {
			t.Logf("long guests run without an idle cgroup (%s): the 2× may not hold beside Postgres", whyNot)
		} else {
			flags = []string{"--long-guest-cgroup", dir}
		}
	}
	node := env.StartNode("a", flags...)

	// Memory of the serve process, sampled all along.
	peakRSS := reliability.Peak(50*time.Millisecond, func(context.Context) (int64, error) { return node.RSS(), nil })
	var baselineRSS, maxRSS int64

	// The full suite sends 200 healthy messages a second, so that the p99
	// of the attack's several seconds is taken over more than a thousand
	// messages, not decided by the second slowest of a hundred. The short
	// one (CI) keeps 20 a second, leaving the deprioritized hostile guests
	// the CPU they need to reach their limits on a shared machine.
	workers, interval := reliability.Size(1, 2), reliability.Size(50*time.Millisecond, 10*time.Millisecond)
	load := reliability.StartLoad(ctx, workers, interval, func(ctx context.Context) ([]int64, error) {
		return reliability.SendN(ctx, env.Queue, "healthy", 1, 1, nil)
	})
	time.Sleep(phase) // baseline
	baselineRSS = node.RSS()
	hostileFrom := time.Now()
	kinds := map[string]string{"loop": "timeout", "recurse": "trap", "membomb": "memory_limit",
		"stdout": "output_too_large", "trap": "trap"}
	var order []string
	for range rounds {
		for do := range kinds {
			order = append(order, do)
		}
	}
	hostile, err := reliability.SendN(ctx, env.Queue, "hostile", len(order), len(order), func(i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"do":%q}`, order[i]))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.WaitDrained(ctx, "hostile", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	hostileTo := time.Now()
	if d := hostileTo.Sub(hostileFrom); d < phase {
		time.Sleep(phase - d)
	}
	sends := load.Stop()
	if dir := os.Getenv(dumpVar); dir != "" {
		// After node.Term below, so the log is complete.
		defer dumpHostile(t, dir, hostileFrom, hostileTo, sends, node)
	}
	if _, err := env.WaitDrained(ctx, "healthy", time.Minute); err != nil {
		t.Fatal(err)
	}
	maxRSS = peakRSS()
	if code, _ := node.Term(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}

	// Every hostile batch failed with the right kind, within its limits.
	rows, err := env.Pool.Query(ctx, `SELECT message_ids[1], coalesce(failure_kind, ''), coalesce(error, ''), duration_ms, started_at
		FROM `+env.Schema+`.invocations WHERE function = 'hostile' ORDER BY started_at`)
	if err != nil {
		t.Fatal(err)
	}
	kindOf := map[int64]string{}
	for i, seq := range hostile {
		kindOf[seq] = order[i]
	}
	runs := map[string]int{}
	slowest := map[string]time.Duration{}
	var spans []hostileSpan
	for rows.Next() {
		var seq int64
		var kind, msg string
		var ms float64
		var at time.Time
		if err := rows.Scan(&seq, &kind, &msg, &ms, &at); err != nil {
			t.Fatal(err)
		}
		do := kindOf[seq]
		took := time.Duration(ms * float64(time.Millisecond))
		spans = append(spans, hostileSpan{do, at.Sub(hostileFrom), took})
		runs[do]++
		slowest[do] = max(slowest[do], took)
		if kind != kinds[do] {
			t.Errorf("hostile %q (message %d): failure %q (%s), want %q", do, seq, kind, msg, kinds[do])
		}
		if took > timeout+time.Second {
			t.Errorf("hostile %q (message %d) took %s, past its %s timeout", do, seq, took, timeout)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var slowestText []string
	for do := range kinds {
		slowestText = append(slowestText, fmt.Sprintf("%s %s", do, slowest[do].Round(time.Millisecond)))
		if runs[do] != 2*rounds {
			t.Errorf("hostile %q ran %d times, want %d (max receive count 2, %d rounds)", do, runs[do], 2*rounds, rounds)
		}
	}
	sort.Strings(slowestText)

	// The healthy function's latency before and during the hostile ones.
	logs, err := env.ReadLogs()
	if err != nil {
		t.Fatal(err)
	}
	var before, during []float64
	var worst []healthyRun
	for _, x := range logs.Execs {
		if !strings.HasPrefix(x.Trigger, "queue:healthy:") {
			continue
		}
		at := time.UnixMilli(x.StartMS)
		switch {
		case at.Before(hostileFrom):
			before = append(before, x.LatencyMS)
		case at.Before(hostileTo):
			during = append(during, x.LatencyMS)
			worst = append(worst, healthyRun{at.Sub(hostileFrom), x.LatencyMS})
		}
	}
	sort.Slice(worst, func(i, j int) bool { return worst[i].lat > worst[j].lat })
	for _, w := range worst[:min(5, len(worst))] {
		t.Logf("slowest healthy runs during the hostile ones: %.1f ms at +%s", w.lat, w.at.Round(time.Millisecond))
	}
	p99b, p99d := reliability.Percentile(before, 99), reliability.Percentile(during, 99)
	logSlowWindows(t, worst, spans, 2*p99b)
	v := reliability.Check(reliability.Acked(sends), logs, "healthy", reliability.CheckOptions{})
	// Bounded: the instances' linear memories (concurrency × the limit),
	// twice over for the garbage collector's headroom (GOGC 100), plus
	// 256 MiB for the rest; an unbounded bomb would take gigabytes.
	bound := baselineRSS + 2*int64(concurrency*memoryMiB)<<20 + 256<<20
	t.Logf("hostile functions (%d rounds of loop, recurse, membomb, stdout, trap; %d MiB, %s): slowest failures %s; healthy p50/p99 send-to-function %.1f/%.1f ms before (%d msgs), %.1f/%.1f ms during (%d msgs); serve RSS %d MiB at baseline, peak %d MiB (bound %d MiB); healthy: %s",
		rounds, memoryMiB, timeout, strings.Join(slowestText, ", "), reliability.Percentile(before, 50), p99b, len(before),
		reliability.Percentile(during, 50), p99d, len(during), baselineRSS>>20, maxRSS>>20, bound>>20, v)
	// A latency ratio is a measurement: the short suite (CI, shared
	// machines) reports it; the full suite holds it to the 2×.
	if reliability.Full() && (len(during) < 1000 || len(before) < 1000) {
		t.Errorf("healthy messages measured: %d before and %d during the hostile functions, want at least 1,000 each for a p99", len(before), len(during))
	}
	if p99d > 2*p99b {
		msg := fmt.Sprintf("healthy p99 %.1f ms during the hostile functions, %.1f× its baseline %.1f ms (want within 2×)", p99d, p99d/p99b, p99b)
		if reliability.Full() {
			t.Error(msg)
		} else {
			t.Log(msg + "; asserted only by the full suite")
		}
	}
	if maxRSS > bound {
		t.Errorf("serve RSS peaked at %d MiB, past baseline + 2 × concurrency × memory limit + 256 MiB = %d MiB", maxRSS>>20, bound>>20)
	}
	if err := v.Err(); err != nil {
		t.Errorf("broken promises:\n%v", err)
	}
}

// dumpVar names a folder where TestHostileFunctions leaves what
// reliability/hostiletrace reads beside a trace of the serve process
// (SLUICE_TRACE): sends.txt (the attack's start and end, then each
// healthy send's sequence, call and return in Unix µs) and serve.log.
const dumpVar = "SLUICE_RELIABILITY_DUMP"

// dumpHostile writes sends.txt and serve.log into dir (dumpVar).
func dumpHostile(t *testing.T, dir string, from, to time.Time, sends []reliability.SendResult, node *reliability.Node) {
	var b strings.Builder
	fmt.Fprintf(&b, "hostile %d %d\n", from.UnixMicro(), to.UnixMicro())
	for _, s := range sends {
		for _, q := range s.Seqs {
			fmt.Fprintf(&b, "send %d %d %d\n", q, s.At.UnixMicro(), s.Done.UnixMicro())
		}
	}
	log, err := os.ReadFile(node.Log)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "serve.log"), log, 0o644)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "sends.txt"), []byte(b.String()), 0o644)
	}
	if err != nil {
		t.Errorf("%s=%s: %v", dumpVar, dir, err)
	}
}

// healthyRun is a healthy message's start (after the attack began) and
// its send-to-function latency.
type healthyRun struct {
	at  time.Duration
	lat float64
}

// hostileSpan is one hostile invocation: what it did, when it started
// (after the attack began) and how long it ran.
type hostileSpan struct {
	do   string
	at   time.Duration
	took time.Duration
}

// logSlowWindows logs the 100 ms windows of the attack holding the most
// healthy runs slower than limitMS, each with the hostile invocations that
// started or ended in it or the window before: which part of the attack
// the slow runs go with.
func logSlowWindows(t *testing.T, runs []healthyRun, spans []hostileSpan, limitMS float64) {
	const width = 100 * time.Millisecond
	slow := map[time.Duration]int{}
	all := map[time.Duration]int{}
	for _, r := range runs {
		w := r.at.Truncate(width)
		all[w]++
		if r.lat > limitMS {
			slow[w]++
		}
	}
	var ws []time.Duration
	for w := range slow {
		ws = append(ws, w)
	}
	sort.Slice(ws, func(i, j int) bool { return slow[ws[i]] > slow[ws[j]] || slow[ws[i]] == slow[ws[j]] && ws[i] < ws[j] })
	for _, w := range ws[:min(6, len(ws))] {
		var near []string
		for _, s := range spans {
			if s.at >= w-width && s.at < w+width {
				near = append(near, fmt.Sprintf("%s starts +%s", s.do, s.at.Round(time.Millisecond)))
			}
			if end := s.at + s.took; end >= w-width && end < w+width {
				near = append(near, fmt.Sprintf("%s ends +%s", s.do, end.Round(time.Millisecond)))
			}
		}
		t.Logf("healthy runs over %.1f ms in +%s..%s: %d of %d; hostile then: %s", limitMS, w, w+width, slow[w], all[w], strings.Join(near, ", "))
	}
}
