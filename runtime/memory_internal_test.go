package runtime

import (
	"bytes"
	"testing"
)

// copyPreemptibly copies exactly, whatever the length against its chunk.
func TestCopyPreemptibly(t *testing.T) {
	for _, n := range []int{0, 1, copyChunk - 1, copyChunk, copyChunk + 1, 3*copyChunk + 17} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i*7 + i>>20)
		}
		dst := make([]byte, n+5)
		copyPreemptibly(dst, src)
		if !bytes.Equal(dst[:n], src) || !bytes.Equal(dst[n:], make([]byte, 5)) {
			t.Fatalf("copy of %d bytes differs from its source or wrote past it", n)
		}
	}
}
