package pgqueue

import (
	"context"
	"errors"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The hot path calls the SQL API's queue_* functions, keyed by queue id
// (migration 014): on Citus the id is their distribution argument, so each
// call runs on the worker holding the queue's shard. The Client resolves
// (account, queue name) to the id once and keeps it in a bounded cache; a
// call whose cached id no longer names that queue (deleted and created
// again since) fails with the queue-not-found error before it changes
// anything, and is then retried once with the id resolved again.

// maxCachedIDs bounds the queue ids a Client keeps. Past it, one entry is
// dropped for each new one: a process working on more queues than this
// resolves some ids again, one indexed read each.
const maxCachedIDs = 10000

// idCache maps account and queue name to the queue's id. It is safe for
// concurrent use.
type idCache struct {
	mu  sync.RWMutex
	ids map[queueName]int64
	max int
}

type queueName struct{ account, name string }

func newIDCache(max int) *idCache { return &idCache{ids: make(map[queueName]int64), max: max} }

func (c *idCache) get(account, queue string) (int64, bool) {
	c.mu.RLock()
	id, ok := c.ids[queueName{account, queue}]
	c.mu.RUnlock()
	return id, ok
}

func (c *idCache) put(account, queue string, id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := queueName{account, queue}
	if _, ok := c.ids[k]; !ok && len(c.ids) >= c.max {
		for old := range c.ids { // an arbitrary entry: map order is random
			delete(c.ids, old)
			break
		}
	}
	c.ids[k] = id
}

// drop forgets queue's id if it is still id.
func (c *idCache) drop(account, queue string, id int64) {
	c.mu.Lock()
	if c.ids[queueName{account, queue}] == id {
		delete(c.ids, queueName{account, queue})
	}
	c.mu.Unlock()
}

// resolveID returns the id of account's queue, from the cache or else
// from the database (ErrQueueNotFound when there is no such queue).
func (c *Client) resolveID(ctx context.Context, op, account, queue string) (id int64, cached bool, err error) {
	if id, ok := c.ids.get(account, queue); ok {
		return id, true, nil
	}
	if err := c.pool.QueryRow(ctx, c.q.get("queue_id"), account, queue).Scan(&id); err != nil {
		return 0, false, convertError(op, err)
	}
	c.ids.put(account, queue, id)
	return id, false, nil
}

// byID runs call with the id of account's queue. When call fails with
// ErrQueueNotFound on an id taken from the cache, the id is resolved again
// and call retried once: the queue may have been deleted and created
// again under the same name. Every queue_* function checks the id before
// it changes anything, so the failed call did nothing.
func (c *Client) byID(ctx context.Context, op, account, queue string, call func(id int64) error) error {
	id, cached, err := c.resolveID(ctx, op, account, queue)
	if err != nil {
		return err
	}
	err = call(id)
	if err == nil || !cached || !errors.Is(err, ErrQueueNotFound) {
		return err
	}
	c.ids.drop(account, queue, id)
	if id, _, err = c.resolveID(ctx, op, account, queue); err != nil {
		return err
	}
	return call(id)
}

// onPool reports whether db is the client's own pool: a statement sent
// there is a transaction of its own, where the Client calls the queue_*
// functions by id (delegated on Citus) and may retry a stale id. In a
// caller's transaction it calls the account_* functions by name instead:
// Citus does not delegate inside a transaction block anyway, and a failed
// statement would abort the caller's transaction, leaving no retry.
func (c *Client) onPool(db DB) bool {
	p, ok := db.(*pgxpool.Pool)
	return ok && p == c.pool
}
