package server

import (
	"context"
	"fmt"
)

// An account's changes that a check must see whole run one at a time, in
// this process and across processes on the same database: a limit's count
// and the create it allows, and an access check on a hook, trigger or key
// and the write it allows. Each holds the account's change lock, a
// transaction-level advisory lock taken on a connection of its own and
// released when that transaction ends, however the change ends (a dropped
// connection releases it too).
//
// The change itself runs on other connections of the pool, so a holder
// needs two; changeLocks bounds the holders of one process to a quarter of
// the pool, which keeps connections free for the changes they wait on.

// exclusive runs fn holding account's change lock. Take it after reading
// the request's body, so that no client holds it while it sends.
func (a *api) exclusive(ctx context.Context, account string, fn func() error) error {
	select {
	case a.changeLocks <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("server: change lock of account %s: %w", account, context.Cause(ctx))
	}
	defer func() { <-a.changeLocks }()
	tx, err := a.s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("server: change lock of account %s: %w", account, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // nothing was written in it; the lock goes either way
	if _, err := tx.Exec(ctx, a.q.Get("lock_account_changes"), a.s.cfg.Schema+"/"+account); err != nil {
		return fmt.Errorf("server: change lock of account %s: %w", account, err)
	}
	return fn()
}

// changeLockHolders is how many requests of one process may hold change
// locks at once for a pool of maxConns connections.
func changeLockHolders(maxConns int32) int {
	return max(1, int(maxConns)/4)
}
