package runtime

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// memoryBudget bounds the linear memory that a set of instances hold
// together: every instance of the runtime (Config.GuestMemory), or every
// instance of one account's functions (Config.GuestMemoryPerAccount).
// An instance reserves each growth of its memory before it takes it and
// gives the whole back when it is freed.
type memoryBudget struct {
	limit atomic.Int64 // bytes; 0 or less: no bound (used is still counted)
	used  atomic.Int64
	// whose names the instances in a failure: "its account's instances",
	// "this runtime's instances".
	whose string
	// reclaim, when set, frees idle memory counted in the budget until n
	// bytes more fit (see Runtime.freeIdle) and reports whether they do.
	reclaim func(n int64) bool
}

// newMemoryBudget returns a budget of limit bytes (0 or less: no bound)
// for the instances whose names.
func newMemoryBudget(limit int64, whose string) *memoryBudget {
	b := &memoryBudget{whose: whose}
	b.limit.Store(limit)
	return b
}

// reserve takes n bytes from the budget, or reports that they would take
// it past its limit and takes nothing.
func (b *memoryBudget) reserve(n int64) bool {
	limit := b.limit.Load()
	for {
		used := b.used.Load()
		if limit > 0 && used+n > limit {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// release gives back n bytes reserved (or forced) before.
func (b *memoryBudget) release(n int64) { b.used.Add(-n) }

// refusal says what a guest refused memory by b ran into.
func (b *memoryBudget) refusal() string {
	return fmt.Sprintf("module was refused memory past the %d MiB that %s may hold together", b.limit.Load()>>20, b.whose)
}

// budgets are the budgets one instance's memory counts against, outermost
// last.
type budgets []*memoryBudget

// reserve takes n bytes from every budget, or none of them and returns
// the first that refused. With reclaim, a budget that refuses first frees
// the idle memory it may (see Runtime.freeIdle) to make room.
func (bs budgets) reserve(n int64, reclaim bool) *memoryBudget {
	return bs.reclaiming(n, reclaim, bs.tryReserve)
}

// over returns the first budget that n bytes more would take past its
// limit, nil when they fit every one (taking nothing). With reclaim, as
// reserve.
func (bs budgets) over(n int64, reclaim bool) *memoryBudget {
	return bs.reclaiming(n, reclaim, bs.firstOver)
}

// reclaiming returns what try(n) returns: the budget that refuses n
// bytes, or nil. With reclaim, a budget that refuses frees idle memory
// and try runs again, up to once a budget.
func (bs budgets) reclaiming(n int64, reclaim bool, try func(int64) *memoryBudget) *memoryBudget {
	for range len(bs) {
		if refused := try(n); refused == nil || !reclaim || !refused.freeIdle(n) {
			return refused
		}
	}
	return try(n)
}

// tryReserve is reserve without reclaiming.
func (bs budgets) tryReserve(n int64) (refused *memoryBudget) {
	for i, b := range bs {
		if !b.reserve(n) {
			for _, r := range bs[:i] {
				r.release(n)
			}
			return b
		}
	}
	return nil
}

// firstOver is over without reclaiming.
func (bs budgets) firstOver(n int64) *memoryBudget {
	for _, b := range bs {
		if !b.fits(n) {
			return b
		}
	}
	return nil
}

// fits reports whether n bytes more fit the budget now.
func (b *memoryBudget) fits(n int64) bool {
	limit := b.limit.Load()
	return limit <= 0 || b.used.Load()+n <= limit
}

// freeIdle frees idle memory counted in the budget, if it may, until n
// bytes more fit, and reports whether they do.
func (b *memoryBudget) freeIdle(n int64) bool {
	return b.reclaim != nil && b.reclaim(n)
}

// force counts n bytes in every budget, over its limit or not (an
// instance's initial memory, which wazero gives no way to refuse).
func (bs budgets) force(n int64) {
	for _, b := range bs {
		b.used.Add(n)
	}
}

func (bs budgets) release(n int64) {
	for _, b := range bs {
		b.release(n)
	}
}

// GuestMemory returns the bounds in force on the linear memory of every
// instance of the runtime and of one account's instances, in bytes (0: no
// bound), Config's defaults applied. A function whose MemoryMiB is over
// either would be refused memory before its own limit.
func (r *Runtime) GuestMemory() (all, perAccount int64) {
	return max(r.guestMemory.limit.Load(), 0), max(r.perAccount, 0)
}

// accountBudget returns the budget of account's instances, nil for the
// empty account (functions loaded without one) or when neither limit
// (override, else Config.GuestMemoryPerAccount) bounds it. A non-zero
// override sets the account's limit.
func (r *Runtime) accountBudget(account string, override int64) *memoryBudget {
	limit := override
	if limit == 0 {
		limit = r.perAccount
	}
	if account == "" {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.accounts[account]
	if b == nil {
		if limit <= 0 {
			return nil
		}
		b = r.newBudget(limit, "its account's instances")
		r.accounts[account] = b
	}
	b.limit.Store(limit)
	return b
}

// newBudget returns a budget of limit bytes (see newMemoryBudget) that
// frees the runtime's idle instances counted in it to make room.
func (r *Runtime) newBudget(limit int64, whose string) *memoryBudget {
	b := newMemoryBudget(limit, whose)
	b.reclaim = func(n int64) bool { return r.freeIdle(b, n) }
	return b
}

// freeIdle closes idle instances whose memory counts against b until n
// bytes more fit b, and reports whether they do: reactor instances in the
// pool, those idle longest first, then commands started ahead of their
// batch. Idle instances are a cache: a batch that needs memory comes
// first (a function whose instance is closed starts another at its next
// batch). A command started ahead never asks for room (its memory is
// speculative): so no two of them wait for each other to end.
func (r *Runtime) freeIdle(b *memoryBudget, n int64) bool {
	if b.fits(n) {
		return true
	}
	r.mu.Lock()
	var fns []*Function
	for f := range r.functions {
		if slices.Contains(f.budgets, b) {
			fns = append(fns, f)
		}
	}
	r.mu.Unlock()
	type idleInstance struct {
		f     *Function
		inst  *instance
		since time.Time
	}
	var idle []idleInstance
	for _, f := range fns {
		f.mu.Lock()
		for _, inst := range f.idle {
			idle = append(idle, idleInstance{f, inst, inst.idleSince})
		}
		f.mu.Unlock()
	}
	slices.SortFunc(idle, func(x, y idleInstance) int { return x.since.Compare(y.since) })
	for _, c := range idle {
		if b.fits(n) {
			return true
		}
		if c.f.takeIdle(c.inst) {
			c.inst.closeModule(context.Background(), c.inst.mod)
			r.log.Debug().Str("function", c.f.cfg.Name).Str("account", c.f.cfg.Account).
				Msg("idle instance closed to make room for guest memory")
		}
	}
	for _, f := range fns {
		for !b.fits(n) {
			if !f.discardOneStarted() {
				break
			}
			r.log.Debug().Str("function", f.cfg.Name).Str("account", f.cfg.Account).
				Msg("command started ahead discarded to make room for guest memory")
		}
	}
	return b.fits(n)
}

// instanceBudgets returns the budgets the instances of a function loaded
// with cfg count against.
func (r *Runtime) instanceBudgets(cfg FunctionConfig) budgets {
	if b := r.accountBudget(cfg.Account, cfg.AccountGuestMemory); b != nil {
		return budgets{b, r.guestMemory}
	}
	return budgets{r.guestMemory}
}

// defaultGuestMemory is Config.GuestMemory's default: three quarters of
// the memory the process may use, the least of its cgroup's limit and
// the machine's memory; 0 (no bound) where neither can be read.
func defaultGuestMemory() int64 {
	var least int64
	for _, n := range []int64{cgroupMemoryLimit(), machineMemory()} {
		if n > 0 && (least == 0 || n < least) {
			least = n
		}
	}
	return least / 4 * 3
}

// cgroupMemoryLimit reads the memory limit of the process's cgroup (v2's
// memory.max, or v1's memory.limit_in_bytes, at their usual mounts); 0
// when there is none or it cannot be read.
func cgroupMemoryLimit() int64 {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<62 { // "max", or v1's "unlimited"
			return 0
		}
		return n
	}
	return 0
}

// machineMemory reads MemTotal from /proc/meminfo; 0 when it cannot.
func machineMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
