package runtime

import (
	goruntime "runtime"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// limitedMemory backs one instance's linear memory and refuses to grow it
// past the function's limit, remembering that it did so: that is how a
// failure after a refused memory.grow is told apart from other exits.
type limitedMemory struct {
	buf   []byte
	limit uint64
	hit   atomic.Bool
	// overStart is set when the module's initial memory already exceeds the
	// limit; the allocation succeeds (wazero cannot take a refusal there)
	// and the host fails the instance right after instantiation.
	overStart bool
	acct      *memAccount // the function's totals
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
	if size > m.limit && m.buf == nil {
		m.overStart = true
		m.hit.Store(true)
		m.buf = make([]byte, size)
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
	// steps at start), never reserving past the limit.
	newCap := max(size, min(size+size/4, m.limit))
	buf := make([]byte, size, newCap)
	copyPreemptibly(buf, m.buf)
	m.buf = buf
	m.acct.resized(old, cap(buf))
	return buf
}

// copyChunk is how much of a linear memory copyPreemptibly copies between
// two chances for the scheduler to run something else.
const copyChunk = 1 << 20

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

// Free implements experimental.LinearMemory.
func (m *limitedMemory) Free() {
	m.acct.resized(cap(m.buf), 0)
	m.buf = nil
}
