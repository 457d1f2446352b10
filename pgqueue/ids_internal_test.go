package pgqueue

import (
	"fmt"
	"sync"
	"testing"
)

// The id cache holds at most its bound, drops an id only while it is the
// one cached, and is safe for concurrent use (go test -race).
func TestIDCacheBoundedAndConcurrent(t *testing.T) {
	t.Parallel()
	c := newIDCache(100)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				name := fmt.Sprintf("q%d", i)
				c.put("a", name, int64(g*1000+i))
				c.get("a", name)
				if i%7 == 0 {
					c.drop("a", name, int64(g*1000+i))
				}
			}
		}()
	}
	wg.Wait()
	if n := len(c.ids); n > 100 {
		t.Fatalf("%d ids cached, bound 100", n)
	}
	c.put("a", "x", 1)
	c.drop("a", "x", 2) // another id: kept
	if id, ok := c.get("a", "x"); !ok || id != 1 {
		t.Fatalf("get after drop of another id = %d %v, want 1 true", id, ok)
	}
	c.drop("a", "x", 1)
	if _, ok := c.get("a", "x"); ok {
		t.Fatal("id still cached after drop")
	}
}
