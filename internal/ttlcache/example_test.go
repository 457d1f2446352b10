package ttlcache_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/ttlcache"
)

func Example() {
	c := ttlcache.New[string, int](5*time.Second, 2)
	now := time.Now()
	c.Put("a", 1, now)
	v, ok := c.Get("a", now.Add(time.Second))
	fmt.Println(v, ok)
	_, ok = c.Get("a", now.Add(6*time.Second))
	fmt.Println(ok)
	c.Put("b", 2, now)
	c.Put("c", 3, now) // full: emptied first
	_, ok = c.Get("a", now)
	fmt.Println(ok)
	// Output:
	// 1 true
	// false
	// false
}
