// Command schedsample samples, every -every until killed, how long the
// threads of each group of processes ran and waited in a CPU's run queue
// (/proc/*/task/*/schedstat; groups by command name: pg for postgres,
// serve for sluice, test for *.test, other) and the block device's
// counters (/sys/block/DEV/stat), printing one tab-separated line per
// sample of what happened since the one before: the wall time (Unix µs),
// "group run_ms wait_ms" for each group, and "disk w N wms N fl N flms N
// inflight N" (writes and their ms, flushes and their ms, requests in
// flight). What hostiletrace reads as sched.tsv.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func groupOf(comm string) string {
	switch {
	case comm == "postgres":
		return "pg"
	case comm == "sluice":
		return "serve"
	case strings.HasSuffix(comm, ".test"):
		return "test"
	default:
		return "other"
	}
}

var device = flag.String("device", "vda", "block device whose counters to sample")

var groups = []string{"pg", "serve", "test", "other"}

var (
	comms = map[string]string{}
	last  = map[string][2]int64{}
	first = true
)

// read returns each group's run and runqueue-wait time (ns) since the
// last call, by thread.
func read() (map[string][2]int64, []int64) {
	out := map[string][2]int64{}
	stats, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*/schedstat")
	seen := map[string]bool{}
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		pid := strings.Split(p, "/")[2]
		g, ok := comms[pid]
		if !ok {
			c, err := os.ReadFile("/proc/" + pid + "/comm")
			if err != nil {
				continue
			}
			g = groupOf(strings.TrimSpace(string(c)))
			comms[pid] = g
		}
		run, _ := strconv.ParseInt(f[0], 10, 64)
		wait, _ := strconv.ParseInt(f[1], 10, 64)
		seen[p] = true
		prev := last[p]
		last[p] = [2]int64{run, wait}
		if first {
			continue
		}
		v := out[g]
		out[g] = [2]int64{v[0] + run - prev[0], v[1] + wait - prev[1]}
	}
	for p := range last {
		if !seen[p] {
			delete(last, p)
		}
	}
	first = false
	b, _ := os.ReadFile("/sys/block/" + *device + "/stat")
	var disk []int64
	for _, x := range strings.Fields(string(b)) {
		n, _ := strconv.ParseInt(x, 10, 64)
		disk = append(disk, n)
	}
	return out, disk
}

func main() {
	every := flag.Duration("every", 20*time.Millisecond, "sampling interval")
	flag.Parse()
	_, pd := read()
	for {
		time.Sleep(*every)
		cur, d := read()
		var b strings.Builder
		fmt.Fprintf(&b, "%d", time.Now().UnixMicro())
		for _, g := range groups {
			// Threads that ended or started make a group's delta wrong in
			// that sample; clamp at 0.
			fmt.Fprintf(&b, "\t%s %.1f %.1f", g, float64(cur[g][0])/1e6, float64(cur[g][1])/1e6)
		}
		if len(d) >= 17 && len(pd) >= 17 {
			// fields: 4 writes completed, 7 write ticks ms, 8 in flight, 14 flushes, 15 flush ms
			fmt.Fprintf(&b, "\tdisk w %d wms %d fl %d flms %d inflight %d", d[4]-pd[4], d[7]-pd[7], d[15]-pd[15], d[16]-pd[16], d[8])
		}
		fmt.Println(b.String())
		pd = d
	}
}
