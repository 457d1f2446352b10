package runtime

import "testing"

// Memories counted in a budget together are refused growth past it, the
// growth without its margin is tried before refusing, the first budget to
// refuse is named, and freeing a memory gives its whole array back.
func TestMemoryBudgets(t *testing.T) {
	account := newMemoryBudget(10<<20, "its account's instances")
	process := newMemoryBudget(12<<20, "this runtime's instances")
	bs := budgets{account, process}
	newMemory := func() *limitedMemory {
		return &limitedMemory{limit: 64 << 20, acct: &memAccount{}, budgets: bs}
	}
	a, b := newMemory(), newMemory()
	if buf := a.Reallocate(6 << 20); len(buf) != 6<<20 || a.refused != nil {
		t.Fatalf("first memory of 6 MiB: got %d bytes, refused by %v", len(buf), a.refused)
	}
	held := account.used.Load()
	if held < 6<<20 || held > 8<<20 || process.used.Load() != held {
		t.Fatalf("6 MiB memory holds %d bytes of the account and %d of the process, want the same 6 to 8 MiB in both", held, process.used.Load())
	}
	// 5 MiB more for the second fits only without the quarter's margin
	// if the first left room; 10 MiB never does.
	if buf := b.Reallocate(1 << 20); buf == nil {
		t.Fatal("second memory's first MiB refused")
	}
	if buf := b.Reallocate(10 << 20); buf != nil || b.refused != account || !b.hit.Load() {
		t.Fatalf("growth of the second to 10 MiB: got %d bytes, refused by %v, want refused by the account", len(buf), b.refused)
	}
	if got, want := b.refused.refusal(), "module was refused memory past the 10 MiB that its account's instances may hold together"; got != want {
		t.Fatalf("refusal = %q, want %q", got, want)
	}
	if account.used.Load() > account.limit.Load() || process.used.Load() != account.used.Load() {
		t.Fatalf("after the refusal the account holds %d and the process %d bytes, want at most %d and the same", account.used.Load(), process.used.Load(), account.limit.Load())
	}
	// An account without a bound of its own still meets the process's.
	other := &limitedMemory{limit: 64 << 20, acct: &memAccount{}, budgets: budgets{process}}
	if buf := other.Reallocate(1 << 20); buf == nil {
		t.Fatal("an account without a bound: first MiB refused")
	}
	if buf := other.Reallocate(8 << 20); buf != nil || other.refused != process {
		t.Fatalf("an account without a bound, grown past the process's budget: got %d bytes, refused by %v, want refused by the process", len(buf), other.refused)
	}
	if process.used.Load() > process.limit.Load() {
		t.Fatalf("process holds %d bytes, over its %d", process.used.Load(), process.limit.Load())
	}
	a.Free()
	b.Free()
	other.Free()
	if account.used.Load() != 0 || process.used.Load() != 0 {
		t.Fatalf("after every memory was freed the account holds %d and the process %d bytes, want 0", account.used.Load(), process.used.Load())
	}
	// An initial memory that does not fit is allocated (wazero cannot
	// take a refusal there), counted, and marks the instance to fail.
	c := newMemory()
	if buf := c.Reallocate(11 << 20); len(buf) != 11<<20 || !c.overStart || c.refused != account {
		t.Fatalf("initial memory over the account's budget: %d bytes, overStart %v, refused by %v", len(buf), c.overStart, c.refused)
	}
	c.Free()
	if account.used.Load() != 0 || process.used.Load() != 0 {
		t.Fatalf("after the initial memory was freed the account holds %d and the process %d bytes, want 0", account.used.Load(), process.used.Load())
	}
}

// A budget frees idle memory for what a growth needs, never for the
// quarter's margin it would take besides.
func TestBudgetReclaimsForTheGrowthOnly(t *testing.T) {
	process := newMemoryBudget(48<<20, "this runtime's instances")
	newMemory := func() *limitedMemory {
		return &limitedMemory{limit: 64 << 20, acct: &memAccount{}, budgets: budgets{process}}
	}
	idle := newMemory()
	idle.Reallocate(16 << 20) // holding 32 MiB: the margin, the pool's class
	reclaims := 0
	process.reclaim = func(n int64) bool {
		reclaims++
		idle.Free()
		return process.fits(n)
	}
	m := newMemory()
	m.Reallocate(1 << 20)
	// Exactly what is left: the growth fits without its margin.
	room := process.limit.Load() - process.used.Load()
	if buf := m.Reallocate(uint64(int64(cap(m.buf)) + room)); buf == nil || reclaims != 0 {
		t.Fatalf("growth into the room left: got %d bytes after %d reclaims, want it without reclaiming", len(buf), reclaims)
	}
	if buf := m.Reallocate(uint64(cap(m.buf) + 1<<20)); buf == nil || reclaims != 1 || m.refused != nil {
		t.Fatalf("growth past the room left: got %d bytes after %d reclaims, refused by %v; want it after one", len(buf), reclaims, m.refused)
	}
	if used := process.used.Load(); used != int64(cap(m.buf)) {
		t.Fatalf("the process holds %d bytes, want the growing memory's %d alone", used, cap(m.buf))
	}
	m.Free()
}

// A command started ahead (speculative) takes only the room there is: its
// start and its growths never free idle memory, for it may be the idle
// memory a reclaim would wait on. Any other instance's do.
func TestSpeculativeMemoryNeverReclaims(t *testing.T) {
	process := newMemoryBudget(4<<20, "this runtime's instances")
	held := &limitedMemory{limit: 64 << 20, acct: &memAccount{}, budgets: budgets{process}}
	held.Reallocate(3 << 20) // the budget is full: 4 MiB, the pool's class
	reclaims := 0
	process.reclaim = func(int64) bool { reclaims++; return false }
	f := &Function{budgets: budgets{process}, initialMemory: 1 << 20}
	for _, speculative := range []bool{true, false} {
		reclaims = 0
		mem := &limitedMemory{limit: 64 << 20, acct: &memAccount{}, budgets: f.budgets, speculative: speculative}
		if err := f.admit(&instance{mem: mem}); err == nil {
			t.Fatalf("speculative %v: admitted past a full budget", speculative)
		}
		mem = &limitedMemory{limit: 64 << 20, acct: &memAccount{}, budgets: f.budgets, speculative: speculative, started: true}
		if buf := mem.Reallocate(1 << 20); buf != nil {
			t.Fatalf("speculative %v: grew past a full budget", speculative)
		}
		if want := map[bool]int{true: 0, false: 2}[speculative]; reclaims != want {
			t.Fatalf("speculative %v: %d reclaims for a refused start and growth, want %d", speculative, reclaims, want)
		}
	}
	held.Free()
}
