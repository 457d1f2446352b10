package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the unit of the CPU times in /proc/PID/stat (USER_HZ,
// 100 on Linux's supported architectures; Go cannot ask sysconf without
// cgo).
const clockTick = 10 * time.Millisecond

// node is a Postgres instance whose CPU use the drain test reports: the
// postmaster of its data folder and every process below it.
type node struct {
	name, dataDir string
}

// parseNodes reads -cpu-nodes: comma-separated name=data-folder pairs.
func parseNodes(s string) ([]node, error) {
	var nodes []node
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, dir, ok := strings.Cut(part, "=")
		if !ok || name == "" || dir == "" {
			return nil, fmt.Errorf("-cpu-nodes %q: give name=data-folder pairs, e.g. coordinator=/tmp/c/coordinator,worker1=/tmp/c/worker1", s)
		}
		nodes = append(nodes, node{name: name, dataDir: dir})
	}
	return nodes, nil
}

// cpuUse is the CPU time one node (or this process) spent during a drain.
type cpuUse struct {
	name string
	cpu  time.Duration
}

// cpuSnapshot reads the CPU time used so far by each node's process tree
// and, last, by this process (named "bench": the Sluice engine, or
// River, with its Postgres client work).
func cpuSnapshot(nodes []node) ([]cpuUse, error) {
	procs, err := readProcs()
	if err != nil {
		return nil, err
	}
	var uses []cpuUse
	for _, n := range nodes {
		pid, err := postmasterPID(n.dataDir)
		if err != nil {
			return nil, fmt.Errorf("cpu of node %s: %w", n.name, err)
		}
		uses = append(uses, cpuUse{name: n.name, cpu: procs.treeCPU(pid)})
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return nil, fmt.Errorf("cpu of this process: %w", err)
	}
	self := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return append(uses, cpuUse{name: "bench", cpu: self}), nil
}

// cpuSince returns what each entry of after used since before.
func cpuSince(before, after []cpuUse) []cpuUse {
	d := make([]cpuUse, len(after))
	for i := range after {
		d[i] = cpuUse{name: after[i].name, cpu: after[i].cpu - before[i].cpu}
	}
	return d
}

// postmasterPID reads the pid of the postmaster running in dataDir.
func postmasterPID(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return 0, fmt.Errorf("%s/postmaster.pid: %w", dataDir, err)
	}
	return pid, nil
}

// procs is one reading of /proc: each process's parent and CPU ticks.
type procs struct {
	parent map[int]int
	ticks  map[int]int64 // utime + stime + cutime + cstime
}

// readProcs reads every /proc/PID/stat. A process's ticks include its
// reaped children's (cutime, cstime): a backend that exits during the
// drain is counted in its postmaster's.
func readProcs() (procs, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return procs{}, fmt.Errorf("read /proc: %w", err)
	}
	p := procs{parent: map[int]int{}, ticks: map[int]int64{}}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// The command name, in parentheses, may hold spaces: fields
		// start after the last ')'. Then state, ppid, ... utime is the
		// 14th field of the line, stime, cutime, cstime the next three.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 15 {
			continue
		}
		p.parent[pid], _ = strconv.Atoi(f[1])
		var t int64
		for _, s := range f[11:15] {
			v, _ := strconv.ParseInt(s, 10, 64)
			t += v
		}
		p.ticks[pid] = t
	}
	return p, nil
}

// treeCPU sums the CPU time of root and every process below it.
func (p procs) treeCPU(root int) time.Duration {
	var t int64
	for pid, ticks := range p.ticks {
		for a := pid; a > 1; a = p.parent[a] {
			if a == root {
				t += ticks
				break
			}
		}
	}
	return time.Duration(t) * clockTick
}
