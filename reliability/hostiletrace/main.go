// Command hostiletrace explains the slow healthy invocations of a
// TestHostileFunctions run: where the time between a healthy message's
// creation and its function's start went. It reads a folder holding
//
//   - serve.trace: a Go execution trace of the serve process (SLUICE_TRACE);
//   - serve.log and sends.txt: the serve process's log and the test's send
//     times, written by the test when SLUICE_RELIABILITY_DUMP names the
//     folder;
//   - pg.tsv (optional): pg_stat_activity samples (./pgsample);
//   - sched.tsv (optional): run and run-queue times of the processes and the
//     disk's counters (./schedsample).
//
// For each healthy run slower than -slow during the attack it splits the
// latency into the send (the transaction's start, which is the message's
// created_at, to the test seeing its commit), the dispatcher's claim loop
// until its receive returned the message, the batch goroutine until the
// invoke, and the invoke until the guest started, and says in what state
// the goroutine spent each (running, runnable waiting for a P, waiting on
// the network, in a system call...), what the Ps ran meanwhile, and what
// Postgres waited on during the receives that took long. It is a separate
// module so the main one does not depend on golang.org/x/exp/trace.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/exp/trace"
)

type span struct {
	from, to int64 // wall µs
	state    trace.GoState
	reason   string
	proc     trace.ProcID
}

type gor struct {
	id     trace.GoID
	spans  []span
	cur    trace.GoState
	since  int64
	reason string
	proc   trace.ProcID
	label  string
	funcs  map[string]bool
}

type logEv struct {
	at  int64
	g   trace.GoID
	cat string
	msg string
}

type rng struct {
	name     string
	from, to int64
	g        trace.GoID
}

type snap struct{ tr, wall int64 }

var snaps []snap

func wallOf(t trace.Time) int64 {
	s := snaps[0]
	for _, x := range snaps {
		if int64(t) >= x.tr {
			s = x
		}
	}
	return s.wall + (int64(t)-s.tr)/1000
}

var interesting = []string{
	"triggers.(*dispatcher).run", "triggers.(*dispatcher).settler", "triggers.(*dispatcher).extendLeases",
	"pgqueue.(*Listener)", "runtime.gcBgMarkWorker", "server.", "net/http.", "triggers.(*Engine)",
	"pgqueue.(*Sweeper)", "sweeper", "runtime.(*Function).Invoke", "puddle", "pgxpool",
}

func main() {
	dir := flag.String("dir", "", "folder with serve.trace, serve.log, sends.txt")
	limit := flag.Float64("slow", 0, "a healthy run is slow over this many ms (0: 2× baseline p99)")
	top := flag.Int("top", 12, "slowest runs to detail")
	flag.Parse()

	f, err := os.Open(*dir + "/serve.trace")
	if err != nil {
		panic(err)
	}
	r, err := trace.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		panic(err)
	}
	var evs []trace.Event
	for {
		ev, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			panic(err)
		}
		if ev.Kind() == trace.EventSync {
			if cs := ev.Sync().ClockSnapshot; cs != nil {
				snaps = append(snaps, snap{int64(cs.Trace), cs.Wall.UnixMicro()})
			}
		}
		evs = append(evs, ev)
	}
	if len(snaps) == 0 {
		panic("no clock snapshot")
	}
	gs := map[trace.GoID]*gor{}
	getG := func(id trace.GoID) *gor {
		g := gs[id]
		if g == nil {
			g = &gor{id: id, funcs: map[string]bool{}, since: -1}
			gs[id] = g
		}
		return g
	}
	note := func(g *gor, st trace.Stack) {
		for fr := range st.Frames() {
			for _, k := range interesting {
				if strings.Contains(fr.Func, k) {
					g.funcs[fr.Func] = true
				}
			}
		}
	}
	var logs []logEv
	var ranges []rng
	open := map[string]int64{}
	for _, ev := range evs {
		t := wallOf(ev.Time())
		switch ev.Kind() {
		case trace.EventStateTransition:
			st := ev.StateTransition()
			if st.Resource.Kind != trace.ResourceGoroutine {
				continue
			}
			g := getG(st.Resource.Goroutine())
			_, to := st.Goroutine()
			if g.since >= 0 {
				g.spans = append(g.spans, span{g.since, t, g.cur, g.reason, g.proc})
			}
			g.cur, g.since, g.reason, g.proc = to, t, st.Reason, ev.Proc()
			note(g, st.Stack)
			note(g, ev.Stack())
		case trace.EventLog:
			l := ev.Log()
			logs = append(logs, logEv{t, ev.Goroutine(), l.Category, l.Message})
		case trace.EventRangeBegin:
			rg := ev.Range()
			open[rg.Name+"|"+fmt.Sprint(rg.Scope)] = t
		case trace.EventRangeEnd:
			rg := ev.Range()
			k := rg.Name + "|" + fmt.Sprint(rg.Scope)
			if b, ok := open[k]; ok {
				var g trace.GoID
				if rg.Scope.Kind == trace.ResourceGoroutine {
					g = rg.Scope.Goroutine()
				}
				ranges = append(ranges, rng{rg.Name, b, t, g})
				delete(open, k)
			}
		}
	}
	for _, g := range gs {
		if g.since >= 0 {
			g.spans = append(g.spans, span{g.since, 1 << 62, g.cur, g.reason, g.proc})
		}
	}
	// Label goroutines.
	received := map[int64]logEv{} // healthy seq -> receive log
	invoked := map[int64]logEv{}
	notifies := []int64{}
	for _, l := range logs {
		switch l.cat {
		case "sluice.notify":
			notifies = append(notifies, l.at)
		case "sluice.received", "sluice.invoke":
			parts := strings.Fields(l.msg)
			q := parts[0]
			if l.cat == "sluice.invoke" {
				getG(l.g).label = "batch:" + q
			} else {
				getG(l.g).label = "claim:" + q
			}
			if q != "healthy" {
				continue
			}
			for _, p := range parts[1:] {
				seq, _ := strconv.ParseInt(p, 10, 64)
				if l.cat == "sluice.received" {
					received[seq] = l
				} else {
					invoked[seq] = l
				}
			}
		}
	}
	for _, g := range gs {
		if g.label != "" {
			continue
		}
		switch {
		case has(g, "gcBgMarkWorker"):
			g.label = "gc-worker"
		case has(g, "settler"):
			g.label = "settler"
		case has(g, "extendLeases"):
			g.label = "extend"
		case has(g, "Listener"):
			g.label = "listener"
		case has(g, "Invoke"):
			g.label = "invoke-other"
		case has(g, "puddle") || has(g, "pgxpool"):
			g.label = "pgxpool"
		case has(g, "net/http"):
			g.label = "http"
		case len(g.funcs) > 0:
			for k := range g.funcs {
				g.label = "other:" + k
				break
			}
		default:
			g.label = "other"
		}
	}

	// Serve log and sends.
	type exec struct {
		seq      int64
		s, c     int64
		lat      float64
		done, at int64
	}
	sends := map[int64][2]int64{}
	var hFrom, hTo int64
	sf, err := os.ReadFile(*dir + "/sends.txt")
	if err != nil {
		panic(err)
	}
	for _, ln := range strings.Split(string(sf), "\n") {
		p := strings.Fields(ln)
		if len(p) == 3 && p[0] == "hostile" {
			hFrom, _ = strconv.ParseInt(p[1], 10, 64)
			hTo, _ = strconv.ParseInt(p[2], 10, 64)
		}
		if len(p) == 4 && p[0] == "send" {
			q, _ := strconv.ParseInt(p[1], 10, 64)
			a, _ := strconv.ParseInt(p[2], 10, 64)
			d, _ := strconv.ParseInt(p[3], 10, 64)
			sends[q] = [2]int64{a, d}
		}
	}
	lf, err := os.Open(*dir + "/serve.log")
	if err != nil {
		panic(err)
	}
	sc := bufio.NewScanner(lf)
	sc.Buffer(make([]byte, 4<<20), 4<<20)
	var before, during []exec
	for sc.Scan() {
		var ln struct {
			Message, Trigger, ID string
			Lat                  float64 `json:"lat_ms"`
			S                    int64   `json:"s_us"`
			C                    int64   `json:"c_us"`
		}
		if json.Unmarshal(sc.Bytes(), &ln) != nil || ln.Message != "exec" || !strings.HasPrefix(ln.Trigger, "queue:healthy") {
			continue
		}
		seq, _ := strconv.ParseInt(ln.ID, 10, 64)
		x := exec{seq: seq, s: ln.S, c: ln.C, lat: ln.Lat, at: sends[seq][0], done: sends[seq][1]}
		switch {
		case x.s < hFrom:
			before = append(before, x)
		case x.s < hTo:
			during = append(during, x)
		}
	}
	p99 := func(xs []exec) float64 {
		l := make([]float64, len(xs))
		for i, x := range xs {
			l[i] = x.lat
		}
		sort.Float64s(l)
		if len(l) == 0 {
			return 0
		}
		return l[min(len(l)-1, int(float64(len(l))*0.99))]
	}
	pb, pd := p99(before), p99(during)
	if *limit == 0 {
		*limit = 2 * pb
	}
	fmt.Printf("attack %.3fs; healthy p99 before %.1f ms (%d), during %.1f ms (%d); slow = over %.1f ms\n",
		float64(hTo-hFrom)/1e6, pb, len(before), pd, len(during), *limit)

	// Breakdown of a goroutine's time over [a, b).
	breakdown := func(g *gor, a, b int64) map[string]int64 {
		out := map[string]int64{}
		if g == nil {
			out["?no-goroutine"] += b - a
			return out
		}
		for _, s := range g.spans {
			lo, hi := max(s.from, a), min(s.to, b)
			if hi <= lo {
				continue
			}
			k := s.state.String()
			if s.state == trace.GoWaiting {
				k += "(" + s.reason + ")"
			}
			out[k] += hi - lo
		}
		return out
	}
	// Time (µs) per goroutine label in state st over [a, b): with
	// GoRunning, what ran on the Ps.
	inState := func(st trace.GoState, a, b int64) map[string]int64 {
		out := map[string]int64{}
		for _, g := range gs {
			for _, s := range g.spans {
				if s.state != st {
					continue
				}
				lo, hi := max(s.from, a), min(s.to, b)
				if hi > lo {
					out[g.label] += hi - lo
				}
			}
		}
		return out
	}
	procsDuring := func(a, b int64) map[string]int64 { return inState(trace.GoRunning, a, b) }
	runnableDuring := func(a, b int64) map[string]int64 { return inState(trace.GoRunnable, a, b) }
	gcDuring := func(a, b int64) []string {
		var out []string
		for _, r := range ranges {
			lo, hi := max(r.from, a), min(r.to, b)
			if hi > lo {
				out = append(out, fmt.Sprintf("%s %.1fms (g%d %s)", r.name, float64(hi-lo)/1000, r.g, labelOf(gs, r.g)))
			}
		}
		return out
	}

	sort.Slice(during, func(i, j int) bool { return during[i].lat > during[j].lat })
	agg := map[string]int64{}
	nslow := 0
	segAgg := map[string]int64{}
	for i, x := range during {
		if x.lat <= *limit {
			break
		}
		nslow++
		rv, okr := received[x.seq]
		iv, oki := invoked[x.seq]
		if !okr || !oki {
			fmt.Printf("seq %d: no trace log (received %v, invoked %v)\n", x.seq, okr, oki)
			continue
		}
		var nt int64
		for _, n := range notifies {
			if n >= x.c {
				nt = n
				break
			}
		}
		segs := []struct {
			name string
			a, b int64
			g    *gor
		}{
			{"send(created->sender done)", x.c, x.done, nil},
			{"done->received (claim loop)", x.done, rv.at, gs[rv.g]},
			{"received->invoke (batch g)", rv.at, iv.at, gs[iv.g]},
			{"invoke->guest start (batch g)", iv.at, x.s, gs[iv.g]},
		}
		for _, s := range segs {
			segAgg[s.name] += s.b - s.a
			if s.g != nil {
				for k, v := range breakdown(s.g, s.a, s.b) {
					agg[s.name+" "+k] += v
				}
			}
		}
		if i >= *top {
			continue
		}
		fmt.Printf("\nseq %d lat %.1f ms at +%.3fs: send took %.1f ms (created %+.1f ms after call), notify %+.1f ms after done\n",
			x.seq, x.lat, float64(x.s-hFrom)/1e6, float64(x.done-x.at)/1000, float64(x.c-x.at)/1000, float64(nt-x.done)/1000)
		for _, s := range segs[1:] {
			fmt.Printf("  %-32s %7.1f ms  g%d %s: %s\n", s.name, float64(s.b-s.a)/1000, s.g.id, s.g.label, fmtMap(breakdown(s.g, s.a, s.b)))
		}
		if g := gs[rv.g]; g != nil {
			for _, sp := range g.spans {
				if sp.state == trace.GoWaiting && sp.reason == "network" && sp.to > x.done && sp.from < rv.at && sp.to-sp.from > 2000 {
					fmt.Printf("  claim loop network wait %.1f ms from +%.3fs: pg %s\n", float64(sp.to-sp.from)/1000, float64(sp.from-hFrom)/1e6, pgDuring(*dir, sp.from, sp.to))
				}
			}
		}
		if nt > x.done+2000 {
			for _, g := range gs {
				if g.label == "listener" {
					fmt.Printf("  listener g%d from done to the notify (%.1f ms): %s\n", g.id, float64(nt-x.done)/1000, fmtMap(breakdown(g, x.done, nt)))
				}
			}
		}
		fmt.Printf("  Ps ran over [created, guest start] (%.1f ms): %s\n", float64(x.s-x.c)/1000, fmtMap(procsDuring(x.c, x.s)))
		fmt.Printf("  runnable over it: %s\n", fmtMap(runnableDuring(x.c, x.s)))
		if r := gcDuring(x.c, x.s); len(r) > 0 {
			fmt.Printf("  ranges: %s\n", strings.Join(r, "; "))
		}
	}
	fmt.Printf("\n%d slow healthy runs during the attack; total ms per segment: %s\n", nslow, fmtMap(segAgg))
	var ks []string
	for k := range agg {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return agg[ks[i]] > agg[ks[j]] })
	for _, k := range ks[:min(25, len(ks))] {
		fmt.Printf("  %-70s %8.1f ms\n", k, float64(agg[k])/1000)
	}
	// Receive round trips of the healthy claim loop and the test's sends, before and during.
	pct := func(l []float64, p float64) float64 {
		if len(l) == 0 {
			return 0
		}
		sort.Float64s(l)
		return l[min(len(l)-1, int(float64(len(l))*p))]
	}
	for _, g := range gs {
		if g.label != "claim:healthy" {
			continue
		}
		var b, d []float64
		for _, sp := range g.spans {
			if sp.state != trace.GoWaiting || sp.reason != "network" {
				continue
			}
			ms := float64(sp.to-sp.from) / 1000
			switch {
			case sp.from >= hFrom-20e6 && sp.from < hFrom:
				b = append(b, ms)
			case sp.from >= hFrom && sp.from < hTo:
				d = append(d, ms)
			}
		}
		fmt.Printf("healthy receive round trips (claim loop network waits): before (20 s) n=%d p50 %.1f p99 %.1f max %.1f ms; during n=%d p50 %.1f p99 %.1f max %.1f ms\n",
			len(b), pct(b, .5), pct(b, .99), pct(b, 1), len(d), pct(d, .5), pct(d, .99), pct(d, 1))
	}
	{
		var b, d []float64
		for _, sd := range sends {
			ms := float64(sd[1]-sd[0]) / 1000
			switch {
			case sd[0] >= hFrom-20e6 && sd[0] < hFrom:
				b = append(b, ms)
			case sd[0] >= hFrom && sd[0] < hTo:
				d = append(d, ms)
			}
		}
		fmt.Printf("test sends (call to return): before n=%d p50 %.1f p99 %.1f max %.1f ms; during n=%d p50 %.1f p99 %.1f max %.1f ms\n",
			len(b), pct(b, .5), pct(b, .99), pct(b, 1), len(d), pct(d, .5), pct(d, .99), pct(d, 1))
	}
	if wins := slowReceives(gs, hFrom, hTo); len(wins) > 0 {
		sched(*dir, hFrom, hTo, wins)
	}
	// Same aggregate for the fast ones as a contrast.
	fmt.Printf("whole attack, Ps ran: %s\n", fmtMap(procsDuring(hFrom, hTo)))
	fmt.Printf("whole attack, runnable: %s\n", fmtMap(runnableDuring(hFrom, hTo)))
	fmt.Printf("baseline 5 s before, Ps ran: %s\n", fmtMap(procsDuring(hFrom-5e6, hFrom)))
	fmt.Printf("baseline 5 s before, runnable: %s\n", fmtMap(runnableDuring(hFrom-5e6, hFrom)))
}

var pgLines [][]string

// pgDuring summarizes the pg_stat_activity samples (pg.tsv) over [a, b).
func pgDuring(dir string, a, b int64) string {
	if pgLines == nil {
		data, err := os.ReadFile(dir + "/pg.tsv")
		if err != nil {
			return "(no samples)"
		}
		pgLines = [][]string{}
		for _, ln := range strings.Split(string(data), "\n") {
			if f := strings.Split(ln, "\t"); len(f) == 9 {
				pgLines = append(pgLines, f)
			}
		}
	}
	m := map[string]int64{}
	samples := map[string]bool{}
	for _, f := range pgLines {
		t, _ := strconv.ParseInt(f[0], 10, 64)
		if t < a || t >= b {
			continue
		}
		samples[f[0]] = true
		q := f[8]
		if len(q) > 40 {
			q = q[:40]
		}
		m[f[2]+"/"+f[3]+" "+f[5]+" "+q] += 1000
	}
	return fmt.Sprintf("%d samples: %s", len(samples), fmtMap(m))
}

// slowReceives returns the healthy claim loop's network waits (receive
// round trips) over 60 ms during the attack.
func slowReceives(gs map[trace.GoID]*gor, from, to int64) [][2]int64 {
	var out [][2]int64
	for _, g := range gs {
		if g.label != "claim:healthy" {
			continue
		}
		for _, sp := range g.spans {
			if sp.state == trace.GoWaiting && sp.reason == "network" && sp.from >= from && sp.from < to && sp.to-sp.from > 60000 {
				out = append(out, [2]int64{sp.from, sp.to})
			}
		}
	}
	return out
}

// sched summarizes sched.tsv (schedsample) over the baseline, the attack
// and the slow receives: CPU run and run-queue wait by process group, and
// the disk's flush and write latencies.
func sched(dir string, hFrom, hTo int64, wins [][2]int64) {
	data, err := os.ReadFile(dir + "/sched.tsv")
	if err != nil {
		return
	}
	type row struct {
		t    int64
		g    map[string][2]float64
		disk map[string]int64
	}
	var rows []row
	for _, ln := range strings.Split(string(data), "\n") {
		f := strings.Split(ln, "\t")
		if len(f) < 6 {
			continue
		}
		r := row{g: map[string][2]float64{}, disk: map[string]int64{}}
		r.t, _ = strconv.ParseInt(f[0], 10, 64)
		for _, x := range f[1:5] {
			p := strings.Fields(x)
			run, _ := strconv.ParseFloat(p[1], 64)
			wait, _ := strconv.ParseFloat(p[2], 64)
			r.g[p[0]] = [2]float64{run, wait}
		}
		p := strings.Fields(strings.TrimPrefix(f[5], "disk "))
		for i := 0; i+1 < len(p); i += 2 {
			r.disk[p[i]], _ = strconv.ParseInt(p[i+1], 10, 64)
		}
		rows = append(rows, r)
	}
	summary := func(a, b int64) string {
		run, wait := map[string]float64{}, map[string]float64{}
		disk := map[string]int64{}
		for i, r := range rows {
			// A row holds what happened since the row before it.
			if i == 0 || r.t <= a || rows[i-1].t >= b {
				continue
			}
			for k, v := range r.g {
				run[k] += v[0]
				wait[k] += v[1]
			}
			for k, v := range r.disk {
				disk[k] += v
			}
		}
		var parts []string
		for _, k := range []string{"pg", "serve", "test", "other"} {
			ratio := 0.0
			if run[k] > 0 {
				ratio = wait[k] / run[k]
			}
			parts = append(parts, fmt.Sprintf("%s ran %.0f ms, waited %.0f ms for a CPU (%.1f×)", k, run[k], wait[k], ratio))
		}
		fl, w := max(disk["fl"], 1), max(disk["w"], 1)
		parts = append(parts, fmt.Sprintf("disk %d flushes avg %.2f ms, %d writes avg %.2f ms",
			disk["fl"], float64(disk["flms"])/float64(fl), disk["w"], float64(disk["wms"])/float64(w)))
		return strings.Join(parts, "; ")
	}
	fmt.Printf("sched, 20 s before the attack: %s\n", summary(hFrom-20e6, hFrom))
	fmt.Printf("sched, the attack: %s\n", summary(hFrom, hTo))
	for _, w := range wins {
		fmt.Printf("sched, healthy receive of %.0f ms at +%.3fs: %s\n", float64(w[1]-w[0])/1000, float64(w[0]-hFrom)/1e6, summary(w[0], w[1]))
	}
}

func labelOf(gs map[trace.GoID]*gor, id trace.GoID) string {
	if g := gs[id]; g != nil {
		return g.label
	}
	return ""
}

func has(g *gor, s string) bool {
	for k := range g.funcs {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

func fmtMap(m map[string]int64) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return m[ks[i]] > m[ks[j]] })
	var out []string
	for _, k := range ks {
		if m[k] < 100 {
			continue
		}
		out = append(out, fmt.Sprintf("%s %.1f", k, float64(m[k])/1000))
	}
	return strings.Join(out, ", ")
}
