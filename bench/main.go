// Command bench measures Sluice's trigger runtime against River on the
// same Postgres, in one run: drain throughput of a preloaded backlog
// through a no-op function (Sluice reactor and command modes, River with a
// no-op worker), and send-to-start latency at a steady rate. Each Sluice
// system runs what `sluice serve` runs beside its triggers: a listener and
// a sweeper (from before the backlog is sent). The drain's clock starts
// with the trigger engine, the function already compiled and loaded, as in
// a process that is serving when the messages arrive.
//
//	cd bench && go run . -n 100000 -rate 500 -duration 20s
//
// With -groups 100 the Sluice drain backlog is spread over 100 ordered
// groups (docs/ordered.md); -groups 0,100 measures both, side by side:
//
//	cd bench && go run . -systems sluice-reactor -groups 0,100 -n 20000 -batch 100
//
// -batch takes a list too: each batch size is measured in turn with every
// system, River beside each, and each Sluice drain printed as a ratio to
// River's (issue #18's rows):
//
//	cd bench && go run . -systems sluice-reactor,sluice-command,river -batch 1,10,100,1000 -n 50000
//
// sluice-command-c and sluice-command-rust drain through the C and Rust
// triage examples built as commands (their toolchains: scripts/toolchains),
// command modules with no language runtime to start:
//
//	cd bench && go run . -systems sluice-command-c,sluice-command-rust,sluice-command,river -batch 10 -n 50000
//
// -systems queue measures the queue core alone, with no trigger or
// function: a consumer loop of receive and ack as users write by hand,
// and the latency of a send's commit, the wake-up and a receive, which
// is the floor under the Sluice systems' latency:
//
//	cd bench && go run . -systems queue,sluice-reactor,river -batch 10 -n 10000 -rate 500 -duration 10s
//
// With -citus the Sluice schemas are distributed after migrating (what
// `sluice migrate --citus` does), for a -db that is a Citus coordinator;
// -cpu-nodes then reports each node's CPU during the drain (and per
// message), as in docs/scale-out.md "Capacity":
//
//	cd bench && go run . -citus -systems sluice-reactor -batch 10,100 -n 20000 \
//	    -cpu-nodes coordinator=DIR/coordinator,worker1=DIR/worker1,worker2=DIR/worker2
//
// It lives in its own module so the main module does not depend on River.
// Each system gets a fresh schema, dropped afterwards.
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

type config struct {
	url         string
	n           int
	batch       int
	batches     []int // the -batch values
	concurrency int
	ackPolicy   string // the Sluice triggers' ack_policy ("" is the default, ack)
	rate        int
	duration    time.Duration
	systems     []string
	idleQueues  int
	groups      int   // ordered groups of the Sluice drain backlog (0: none)
	groupCounts []int // the -groups values
	citus       bool  // distribute the Sluice schemas (-db is a Citus coordinator)
	nodes       []node
}

func main() {
	var c config
	var systems string
	flag.StringVar(&c.url, "db", firstNonEmpty(os.Getenv("BENCH_DATABASE_URL"), os.Getenv("TEST_DATABASE_URL")), "Postgres URL [BENCH_DATABASE_URL, TEST_DATABASE_URL]")
	flag.IntVar(&c.n, "n", 200000, "messages (jobs) preloaded for the drain test")
	batchList := flag.String("batch", "1000", "comma-separated Sluice trigger batch sizes for the drain test, each measured in turn with every system (River beside each)")
	flag.IntVar(&c.concurrency, "concurrency", 4, "Sluice trigger concurrency (parallel batches)")
	flag.StringVar(&c.ackPolicy, "ack-policy", "", "the Sluice triggers' ack_policy: ack (the default), reject_on_error or ack_first")
	flag.IntVar(&c.rate, "rate", 500, "messages per second for the latency test")
	flag.DurationVar(&c.duration, "duration", 15*time.Second, "length of the latency test")
	flag.StringVar(&systems, "systems", "sluice-reactor,sluice-command,river", "what to measure (also: sluice-command-c and sluice-command-rust, the C and Rust triage examples as commands; queue, the queue core alone with no function; idle)")
	flag.IntVar(&c.idleQueues, "idle-queues", 100, "queue triggers of the idle test")
	groupsList := flag.String("groups", "0", "comma-separated ordered-group counts of the Sluice drain backlog, each measured in turn (0: no groups)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.BoolVar(&c.citus, "citus", false, "distribute each Sluice schema after migrating (sluice migrate --citus); -db must be a Citus coordinator")
	cpuNodes := flag.String("cpu-nodes", "", "comma-separated name=data-folder of the Postgres instances (e.g. a Citus cluster's nodes) whose CPU during the drain to report, read from /proc")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	c.systems = strings.Split(systems, ",")
	nodes, err := parseNodes(*cpuNodes)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	c.nodes = nodes
	for _, g := range strings.Split(*groupsList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(g))
		if err != nil || n < 0 {
			fmt.Fprintf(os.Stderr, "bench: -groups %q: give comma-separated counts like 0,100\n", *groupsList)
			os.Exit(2)
		}
		c.groupCounts = append(c.groupCounts, n)
	}
	for _, b := range strings.Split(*batchList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(b))
		if err != nil || n < 1 || n > 1000 {
			fmt.Fprintf(os.Stderr, "bench: -batch %q: give comma-separated batch sizes from 1 to 1000 like 1,10,100,1000\n", *batchList)
			os.Exit(2)
		}
		c.batches = append(c.batches, n)
	}
	if c.url == "" {
		fmt.Fprintln(os.Stderr, "bench: set -db, BENCH_DATABASE_URL or TEST_DATABASE_URL")
		os.Exit(2)
	}
	if err := run(context.Background(), c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// result is one row of the report.
type result struct {
	system       string
	drainPerSec  float64
	drainElapsed time.Duration
	p50, p99     time.Duration
	// claimP50 and claimP99 are the part of the latency up to the claim
	// that took the message (Sluice's triggers only; 0 elsewhere).
	claimP50, claimP99 time.Duration
	sent               int64    // latency-test messages sent
	samples            int      // and worked (and so measured)
	cpu                []cpuUse // during the drain: each -cpu-nodes node, then this process
}

func run(ctx context.Context, c config) error {
	pcfg, err := pgxpool.ParseConfig(c.url)
	if err != nil {
		return err
	}
	pcfg.MaxConns = 50
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	var version string
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		return err
	}
	fmt.Printf("Postgres %s, %d messages drained, latency at %d msg/s for %s\n\n", version, c.n, c.rate, c.duration)

	var runs []string
	for _, sys := range c.systems {
		if !strings.HasPrefix(sys, "sluice-") {
			runs = append(runs, sys)
			continue
		}
		for _, g := range c.groupCounts {
			runs = append(runs, fmt.Sprintf("%s/%d", sys, g))
		}
	}
	for _, b := range c.batches {
		c.batch = b
		if len(c.batches) > 1 {
			fmt.Printf("batch size %d\n", b)
		}
		if err := runAll(ctx, pool, c, runs); err != nil {
			return err
		}
	}
	return nil
}

// runAll measures each run ("system" or "system/groups") in turn and
// prints its row, then each Sluice drain's ratio to River's.
func runAll(ctx context.Context, pool *pgxpool.Pool, c config, runs []string) error {
	var results []result
	for _, run := range runs {
		sys, g, _ := strings.Cut(run, "/")
		c.groups, _ = strconv.Atoi(g)
		var r result
		var err error
		switch sys {
		case "river":
			r, err = benchRiver(ctx, pool, c)
		case "queue":
			r, err = benchQueue(ctx, pool, c)
		case "idle":
			if err := benchIdle(ctx, pool, c.idleQueues, c.duration, c.citus, c.nodes); err != nil {
				return fmt.Errorf("idle: %w", err)
			}
			continue
		default:
			build, ok := guests[sys]
			if !ok {
				return fmt.Errorf("unknown system %q: use %s, queue or river", sys, strings.Join(slices.Sorted(maps.Keys(guests)), ", "))
			}
			var module []byte
			if module, err = build(ctx); err == nil {
				r, err = benchSluice(ctx, pool, c, module)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", sys, err)
		}
		r.system = sys
		if c.groups > 0 {
			r.system = fmt.Sprintf("%s groups=%d", sys, c.groups)
		}
		results = append(results, r)
		fmt.Printf("%-26s drain %8.0f msg/s (%d in %s)   latency p50 %7s  p99 %7s  (%d of %d sent)\n",
			r.system, r.drainPerSec, c.n, r.drainElapsed.Round(time.Millisecond),
			r.p50.Round(100*time.Microsecond), r.p99.Round(100*time.Microsecond), r.samples, r.sent)
		if r.claimP50 > 0 {
			fmt.Printf("    latency to the claim (send, commit, wake-up, claim): p50 %s  p99 %s\n",
				r.claimP50.Round(100*time.Microsecond), r.claimP99.Round(100*time.Microsecond))
		}
		if len(r.cpu) > 0 {
			line := "    CPU during the drain:"
			for _, u := range r.cpu {
				line += fmt.Sprintf(" %s %.2f s (%.0f µs/msg)", u.name, u.cpu.Seconds(), float64(u.cpu.Microseconds())/float64(c.n))
			}
			fmt.Println(line)
		}
	}
	i := slices.IndexFunc(results, func(r result) bool { return r.system == "river" })
	if i < 0 {
		return nil
	}
	for _, r := range results {
		if r.system != "river" {
			fmt.Printf("%-26s drain %5.2f× River (batch %d)\n", r.system, r.drainPerSec/results[i].drainPerSec, c.batch)
		}
	}
	fmt.Println()
	return nil
}

// probe counts the messages (jobs) a system has worked and, once on,
// collects their send-to-start latencies.
type probe struct {
	worked    atomic.Int64
	measuring atomic.Bool
	mu        sync.Mutex
	latencies []time.Duration
	claims    []time.Duration // the part of each latency up to its claim, where known
}

// observe records that n messages were worked, with latencies for those
// sent during the latency test.
func (p *probe) observe(n int, latencies ...time.Duration) {
	p.worked.Add(int64(n))
	if len(latencies) == 0 || !p.measuring.Load() {
		return
	}
	p.mu.Lock()
	p.latencies = append(p.latencies, latencies...)
	p.mu.Unlock()
}

// observeClaims records, during the latency test, the part of latencies
// observed alongside that went to the claim.
func (p *probe) observeClaims(claims ...time.Duration) {
	if !p.measuring.Load() {
		return
	}
	p.mu.Lock()
	p.claims = append(p.claims, claims...)
	p.mu.Unlock()
}

func (p *probe) samples() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.latencies)
}

// run starts a system holding c.n preloaded messages and times their
// drain; then it sends c.rate messages a second for c.duration with send
// and waits until they were worked too.
func (p *probe) run(ctx context.Context, c config, start func() error, send func() error) (result, error) {
	cpu0, err := cpuSnapshot(c.nodes)
	if err != nil {
		return result{}, err
	}
	began := time.Now()
	if err := start(); err != nil {
		return result{}, err
	}
	for p.worked.Load() < int64(c.n) {
		if time.Since(began) > 10*time.Minute {
			return result{}, fmt.Errorf("drain stalled at %d of %d", p.worked.Load(), c.n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(began)
	cpu1, err := cpuSnapshot(c.nodes)
	if err != nil {
		return result{}, err
	}
	r := result{drainElapsed: elapsed, drainPerSec: float64(c.n) / elapsed.Seconds(), cpu: cpuSince(cpu0, cpu1)}

	p.measuring.Store(true)
	if err := pace(ctx, c.rate, c.duration, func() error {
		r.sent++
		return send()
	}); err != nil {
		return result{}, err
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && int64(p.samples()) < r.sent; {
		time.Sleep(10 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r.samples = len(p.latencies)
	r.p50, r.p99 = percentiles(p.latencies)
	r.claimP50, r.claimP99 = percentiles(p.claims)
	return r, nil
}

// freshSchema returns a new schema name and a func that drops it.
func freshSchema(ctx context.Context, pool *pgxpool.Pool, prefix string) (string, func()) {
	name := fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
	return name, func() {
		_, _ = pool.Exec(context.WithoutCancel(ctx), "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE")
	}
}

// percentiles returns p50 and p99 of samples (sorted in place).
func percentiles(samples []time.Duration) (p50, p99 time.Duration) {
	if len(samples) == 0 {
		return 0, 0
	}
	slices.Sort(samples)
	at := func(p float64) time.Duration { return samples[min(len(samples)-1, int(p*float64(len(samples))))] }
	return at(0.50), at(0.99)
}

// pace calls send rate times a second for d, spreading calls evenly.
func pace(ctx context.Context, rate int, d time.Duration, send func() error) error {
	interval := time.Second / time.Duration(rate)
	t := time.NewTicker(interval)
	defer t.Stop()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if err := send(); err != nil {
			return err
		}
	}
	return nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
