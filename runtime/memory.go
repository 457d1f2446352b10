package runtime

import (
	"math/bits"
	goruntime "runtime"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// limitedMemory backs one instance's linear memory and refuses to grow it
// past the function's limit, remembering that it did so: that is how a
// failure after a refused memory.grow is told apart from other exits.
type limitedMemory struct {
	buf   []byte
	full  []byte // the whole pooled array buf is in (see memoryPool)
	limit uint64
	hit   atomic.Bool
	// overStart is set when the module's initial memory already exceeds the
	// limit, or does not fit a budget; the allocation succeeds (wazero
	// cannot take a refusal there) and the host fails the instance right
	// after instantiation.
	overStart bool
	acct      *memAccount // the function's totals
	// budgets are what the memory counts against besides its limit (see
	// memoryBudget); refused is the one that last refused it, nil when
	// only the limit did.
	budgets budgets
	refused *memoryBudget
	// started is set by the first Reallocate, the initial memory's (which
	// may be empty: a nil buf does not tell).
	started bool
	// speculative is set while the memory's instance is a command started
	// ahead that has not yet got its batch: it takes only the room there
	// is, closing nothing to make more (see Runtime.freeIdle). Read and
	// written on the guest's goroutine.
	speculative bool
	freeMu      sync.Mutex // Free may come from wazero and from the host
}

// refuseStart marks the memory as refused at start by b, before the
// instance was created (see Function.admit).
func (m *limitedMemory) refuseStart(b *memoryBudget) {
	m.overStart, m.refused = true, b
	m.hit.Store(true)
}

// startError is why an instance whose initial memory was over its limit
// or refused by a budget (overStart) does not run.
func (m *limitedMemory) startError() error {
	if m.refused != nil {
		return &abiError{"initial memory refused: " + m.refused.refusal()}
	}
	return &abiError{"initial memory over the limit"}
}

// newBatch forgets the refusals of a pooled instance's earlier batches,
// which it survived.
func (m *limitedMemory) newBatch() {
	m.hit.Store(false)
	m.refused = nil
}

// memAccount totals the linear memory of a function's instances.
type memAccount struct {
	live atomic.Int64 // bytes held by instances not yet freed
	peak atomic.Int64 // the largest single instance so far
}

// resized records that one instance's backing array went from old to new
// bytes (capacity: the host memory it holds).
func (a *memAccount) resized(old, new int) {
	if a == nil {
		return
	}
	a.live.Add(int64(new - old))
	for {
		p := a.peak.Load()
		if int64(new) <= p || a.peak.CompareAndSwap(p, int64(new)) {
			return
		}
	}
}

var _ experimental.LinearMemory = (*limitedMemory)(nil)

// Reallocate implements experimental.LinearMemory.
func (m *limitedMemory) Reallocate(size uint64) []byte {
	initial := !m.started
	m.started = true
	if size > m.limit && initial {
		m.overStart = true
		m.hit.Store(true)
		m.buf = make([]byte, size)
		m.budgets.force(int64(size))
		m.acct.resized(0, int(size))
		return m.buf
	}
	if size > m.limit && size > uint64(len(m.buf)) {
		m.hit.Store(true)
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size] // memory only grows; the tail is still zero
		return m.buf
	}
	old := cap(m.buf)
	// Grow by a quarter at least (Go guests grow memory in many small
	// steps at start), never reserving past the limit, nor past a budget
	// (without the quarter, the growth may still fit).
	newCap := max(size, min(size+size/4, m.limit))
	capacity := m.capacity(newCap, size)
	// Idle instances are closed to make room for what the growth needs,
	// never for the margin, nor for an instance that is idle itself.
	refused := m.budgets.reserve(int64(capacity-uint64(old)), capacity == size && !m.speculative)
	if refused != nil && capacity > size {
		newCap, capacity = size, size
		refused = m.budgets.reserve(int64(capacity-uint64(old)), !m.speculative)
	}
	if refused != nil {
		m.refused = refused
		m.hit.Store(true)
		if !initial {
			return nil
		}
		// The initial memory, which wazero cannot take a refusal of: the
		// host fails the instance right after instantiation.
		m.overStart = true
		m.budgets.force(int64(capacity))
	}
	full := linearMemories.get(int(newCap))
	buf := full[:size:capacity]
	copyPreemptibly(buf, m.buf)
	linearMemories.put(m.full, len(m.buf))
	m.full, m.buf = full, buf
	m.acct.resized(old, cap(buf))
	return buf
}

// capacity is how much of the array linearMemories gives for newCap bytes
// a memory of size bytes may grow into without another: the whole array,
// up to the limit.
func (m *limitedMemory) capacity(newCap, size uint64) uint64 {
	n := newCap
	if k := poolClass(int(newCap)); k >= 0 {
		n = 1 << k
	}
	return min(n, max(size, m.limit))
}

// linearMemories recycles the arrays behind freed linear memories.
var linearMemories memoryPool

// memoryPool keeps the arrays of freed linear memories for the next
// instances, by power-of-two size from one page (64 KiB), in sync.Pools
// (which let the garbage collector have what stays unused). An instance
// gets one cleared, where a fresh allocation would come from pages the
// kernel must fault in one at a time: on a virtual machine that made
// growing a memory bomb's memory cost about 4 ms per MiB, against well
// under 1 ms to clear a MiB already in use; and the churn of fresh arrays
// of tens of MiB made the whole process collect garbage again and again.
// Small memories are pooled too: a C command starts with two pages and
// grows at once, and fresh arrays for it made each of its instances cost
// 0.77 ms where a Rust command's, whose 17 pages were pooled, cost 0.15
// ms (BENCHMARKS.md).
type memoryPool struct {
	classes [maxPoolClass - minPoolClass + 1]sync.Pool // of *pooledMemory
}

// The sizes memoryPool keeps: 64 KiB to 4 GiB.
const (
	minPoolClass = 16
	maxPoolClass = 32
)

type pooledMemory struct {
	b     []byte
	dirty int // b[:dirty] may have been written
}

// poolClass returns the class holding arrays of at least n bytes, or -1.
func poolClass(n int) int {
	k := max(bits.Len(uint(n-1)), minPoolClass)
	if n <= 0 || k > maxPoolClass {
		return -1
	}
	return k
}

// get returns an all-zero array of at least n bytes.
func (p *memoryPool) get(n int) []byte {
	k := poolClass(n)
	if k < 0 {
		return make([]byte, n)
	}
	if v := p.classes[k-minPoolClass].Get(); v != nil {
		pm := v.(*pooledMemory)
		clearPreemptibly(pm.b[:pm.dirty])
		return pm.b
	}
	return make([]byte, 1<<k)
}

// put keeps b, of which the first dirty bytes may be non-zero, for reuse.
// Arrays get did not make are dropped.
func (p *memoryPool) put(b []byte, dirty int) {
	k := poolClass(len(b))
	if k < 0 || len(b) != 1<<k {
		return
	}
	p.classes[k-minPoolClass].Put(&pooledMemory{b: b, dirty: dirty})
}

// clearPreemptibly zeroes b in chunks, yielding the P between them (see
// copyPreemptibly).
func clearPreemptibly(b []byte) {
	for len(b) > copyChunk {
		clear(b[:copyChunk])
		b = b[copyChunk:]
		goruntime.Gosched()
	}
	clear(b)
}

// copyChunk is how much of a linear memory copyPreemptibly copies (or
// clearPreemptibly clears) between two chances for the scheduler to run
// something else: well under a millisecond, even into fresh pages.
const copyChunk = 256 << 10

// copyPreemptibly copies src to dst in chunks, yielding the P between
// them. A memmove cannot be preempted: one copy of tens of MiB would hold
// its P for tens of milliseconds, and a garbage collection that needs every
// P to reach a safe point would stall the whole process behind it.
func copyPreemptibly(dst, src []byte) {
	for len(src) > copyChunk {
		copy(dst, src[:copyChunk])
		dst, src = dst[copyChunk:], src[copyChunk:]
		goruntime.Gosched()
	}
	copy(dst, src)
}

// Free implements experimental.LinearMemory. The host calls it too after
// closing an instance (instance.closeModule); a second call frees
// nothing.
func (m *limitedMemory) Free() {
	m.freeMu.Lock()
	defer m.freeMu.Unlock()
	m.budgets.release(int64(cap(m.buf)))
	m.acct.resized(cap(m.buf), 0)
	linearMemories.put(m.full, len(m.buf))
	m.buf, m.full = nil, nil
}
