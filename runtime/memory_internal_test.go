package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/runtime/internal/guard"
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

// Every way out of a counted function leaves it: after batches of a Go
// reactor (returns, branches to the function's label, panics recovered in
// the guest), its call-depth counter is back to zero.
func TestCallDepthBalanced(t *testing.T) {
	t.Parallel()
	// The suite's shared compilation cache: compiling the two modules here
	// took ~70 s under -race.
	cache, err := wasmbuild.CompiledCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	rt := benchRuntime(t, cache)
	for _, name := range []string{"echo", "runtime/testdata/hostile"} {
		f := benchLoad(t, rt, name, wasmbuild.Reactor, FunctionConfig{PoolSize: 1})
		for _, body := range []string{`{"do":"ack"}`, `{"do":"stderr"}`, `{"do":"unknown"}`, `{"do":"bigresult"}`, `{"x":[1,2,{"y":"z"}]}`} {
			inv := smallBatch(20)
			inv.Messages[0].Body = json.RawMessage(body)
			if _, err := f.Invoke(context.Background(), inv); err != nil {
				t.Fatal(err)
			}
		}
		f.mu.Lock()
		inst := f.idle[len(f.idle)-1]
		f.mu.Unlock()
		g := inst.mod.ExportedGlobal(guard.DepthExport)
		if g == nil {
			t.Fatalf("%s: no %s export: the module was not fuel-checked", name, guard.DepthExport)
		}
		if d := int32(g.Get()); d != 0 {
			t.Fatalf("%s: call depth %d between batches, want 0", name, d)
		}
	}
}

// A recycled array comes back all zero, whatever its last user wrote.
func TestMemoryPoolClears(t *testing.T) {
	var p memoryPool
	b := p.get(3 << 20)
	if len(b) != 4<<20 {
		t.Fatalf("get(3 MiB) gave %d bytes, want the 4 MiB class", len(b))
	}
	for i := range b[:3<<20] {
		b[i] = 0xAB
	}
	p.put(b, 3<<20)
	for range 10 { // sync.Pool may drop it; whatever comes back is zero
		c := p.get(3 << 20)
		if !bytes.Equal(c, make([]byte, len(c))) {
			t.Fatal("a recycled array is not all zero")
		}
		p.put(c, 0)
	}
	if small := p.get(100); len(small) != 64<<10 {
		t.Fatalf("get(100) gave %d bytes, want the one-page class (64 KiB)", len(small))
	}
}
