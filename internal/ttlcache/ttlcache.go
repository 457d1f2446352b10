// Package ttlcache keeps values by key for a fixed time, in a map of
// bounded size: what a hot path reads once per key and period instead of
// on every call (an account's limits, its stored bytes).
package ttlcache

import (
	"sync"
	"time"
)

// Cache holds values for TTL after they are put, at most max of them:
// a put into a full cache empties it first. It is safe for concurrent
// use.
type Cache[K comparable, V any] struct {
	ttl time.Duration
	max int
	mu  sync.Mutex
	m   map[K]entry[V]
}

type entry[V any] struct {
	v  V
	at time.Time
}

// New returns an empty cache keeping each value ttl, max values at most.
func New[K comparable, V any](ttl time.Duration, max int) *Cache[K, V] {
	return &Cache[K, V]{ttl: ttl, max: max, m: map[K]entry[V]{}}
}

// Get returns the value put under k, unless it is older than the TTL at
// now.
func (c *Cache[K, V]) Get(k K, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || now.Sub(e.at) > c.ttl {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Put keeps v under k from now.
func (c *Cache[K, V]) Put(k K, v V, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok && len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[k] = entry[V]{v: v, at: now}
}

// Delete forgets k.
func (c *Cache[K, V]) Delete(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
}

// Clear forgets every key.
func (c *Cache[K, V]) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
}
