package runtime

import (
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
}

var _ experimental.LinearMemory = (*limitedMemory)(nil)

// Reallocate implements experimental.LinearMemory.
func (m *limitedMemory) Reallocate(size uint64) []byte {
	if size > m.limit && m.buf == nil {
		m.overStart = true
		m.hit.Store(true)
		m.buf = make([]byte, size)
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
	// Grow geometrically, but never reserve past the limit.
	newCap := max(size, min(2*uint64(cap(m.buf)), m.limit))
	buf := make([]byte, size, newCap)
	copy(buf, m.buf)
	m.buf = buf
	return buf
}

// Free implements experimental.LinearMemory.
func (m *limitedMemory) Free() { m.buf = nil }
