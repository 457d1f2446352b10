package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/kv"
	"github.com/sluicehq/sluice/pgqueue"
)

// AccountLimits bound what one account may create through the HTTP API
// (see SECURITY.md). In Config.Limits a zero field takes its default; in
// SetAccountLimits a zero field takes the server's value.
type AccountLimits struct {
	// Queues an account may have (default 1000).
	Queues int
	// Functions (default 100).
	Functions int
	// Triggers (default 1000).
	Triggers int
	// Hooks (default 100).
	Hooks int
	// Keys, not revoked (default 100).
	Keys int
	// Topics (default 1000).
	Topics int
	// ModuleBytes is the size of the account's distinct stored modules,
	// every version of every function (default 512 MiB).
	ModuleBytes int64
	// KVEntries and KVBytes bound what the account's key-value stores
	// hold together: entries (default 1,000,000) and bytes of keys plus
	// values (default 1 GiB). Unlike the others they hold for every
	// write, by functions as through the API (kv.Quota).
	KVEntries, KVBytes int64
	// GuestMemoryMiB bounds the linear memory the account's function
	// instances hold at once (the server's is Config.GuestMemoryPerAccount;
	// this field of Config.Limits is not used). It takes effect, for all
	// of the account's instances, when one of its functions is next
	// loaded, and for its deploys: a memory_mb over it is refused.
	GuestMemoryMiB int64
	// MessageBytes bounds what the account's messages and dead letters
	// take up, bodies and headers as stored (default 10 GiB): an account
	// at it may not send or publish, through the API, webhooks, cron or
	// its functions' emits, until it receives, deletes or purges some.
	// Its stored bytes are sampled once a minute (pgqueue.StoredBytes),
	// so it can pass the limit by what it sends until the next sample.
	MessageBytes int64
}

// MaxGuestMemoryMiB is the most AccountLimits.GuestMemoryMiB (and the
// sluice serve flags bounding guest memory) take: 1 EiB, whose bytes fit
// an int64.
const MaxGuestMemoryMiB = 1 << 40

// DefaultLimits are the limits of a server whose Config.Limits leaves
// them out.
var DefaultLimits = AccountLimits{Queues: 1000, Functions: 100, Triggers: 1000, Hooks: 100, Keys: 100, Topics: 1000,
	ModuleBytes: 512 << 20, KVEntries: 1_000_000, KVBytes: 1 << 30, MessageBytes: 10 << 30}

// withDefaults fills the zero fields of l from d.
func (l AccountLimits) withDefaults(d AccountLimits) AccountLimits {
	l.Queues, l.Functions, l.Triggers = cmp.Or(l.Queues, d.Queues), cmp.Or(l.Functions, d.Functions), cmp.Or(l.Triggers, d.Triggers)
	l.Hooks, l.Keys, l.Topics = cmp.Or(l.Hooks, d.Hooks), cmp.Or(l.Keys, d.Keys), cmp.Or(l.Topics, d.Topics)
	l.ModuleBytes, l.KVEntries, l.KVBytes = cmp.Or(l.ModuleBytes, d.ModuleBytes), cmp.Or(l.KVEntries, d.KVEntries), cmp.Or(l.KVBytes, d.KVBytes)
	l.GuestMemoryMiB, l.MessageBytes = cmp.Or(l.GuestMemoryMiB, d.GuestMemoryMiB), cmp.Or(l.MessageBytes, d.MessageBytes)
	return l
}

// SetAccountLimits sets the limits of one account; a zero field takes
// the server's (Config.Limits). The account must exist.
func (s *Server) SetAccountLimits(ctx context.Context, account string, l AccountLimits) error {
	if l.Queues < 0 || l.Functions < 0 || l.Triggers < 0 || l.Hooks < 0 || l.Keys < 0 || l.Topics < 0 || l.ModuleBytes < 0 ||
		l.KVEntries < 0 || l.KVBytes < 0 || l.GuestMemoryMiB < 0 || l.MessageBytes < 0 {
		return fmt.Errorf("server: limits of account %s: %+v: use 0 (the server's) or more", account, l)
	}
	if l.GuestMemoryMiB > MaxGuestMemoryMiB {
		return fmt.Errorf("server: limits of account %s: guest memory %d MiB: use at most %d", account, l.GuestMemoryMiB, MaxGuestMemoryMiB)
	}
	null := func(n int64) any {
		if n == 0 {
			return nil
		}
		return n
	}
	_, err := s.pool.Exec(ctx, s.api.q.Get("set_account_limits"), account, null(int64(l.Queues)), null(int64(l.Functions)),
		null(int64(l.Triggers)), null(int64(l.Hooks)), null(int64(l.Keys)), null(l.ModuleBytes), null(int64(l.Topics)),
		null(l.KVEntries), null(l.KVBytes), null(l.GuestMemoryMiB), null(l.MessageBytes))
	if err != nil {
		return fmt.Errorf("server: set limits of account %s: %w", account, err)
	}
	s.limitsCache.Delete(account)
	return nil
}

// AccountLimits returns the limits that hold for account: its own where
// set, the server's otherwise.
func (s *Server) AccountLimits(ctx context.Context, account string) (AccountLimits, error) {
	return s.accountLimitsOn(ctx, s.pool, account)
}

// accountLimitsOn is AccountLimits read on db.
func (s *Server) accountLimitsOn(ctx context.Context, db pgqueue.DB, account string) (AccountLimits, error) {
	var l AccountLimits
	err := db.QueryRow(ctx, s.api.q.Get("get_account_limits"), account).Scan(&l.Queues, &l.Functions, &l.Triggers,
		&l.Hooks, &l.Keys, &l.ModuleBytes, &l.Topics, &l.KVEntries, &l.KVBytes, &l.GuestMemoryMiB, &l.MessageBytes)
	if errors.Is(err, pgx.ErrNoRows) {
		return s.cfg.Limits, nil
	}
	if err != nil {
		return AccountLimits{}, fmt.Errorf("server: limits of account %s: %w", account, err)
	}
	return l.withDefaults(s.cfg.Limits), nil
}

// Revoked keys stay listed (and refused by name at authentication) for
// revokedKeysDays after their revocation; an account holds at most
// revokedKeysFactor times its Keys limit of keys, live and revoked.
const (
	revokedKeysDays   = 30
	revokedKeysFactor = 10
)

// limitExceeded is the 403 of a create beyond an account's limit.
func limitExceeded(account, what string, limit int64) error {
	return errorf(http.StatusForbidden, "limit_exceeded",
		"account %s has reached its limit of %d %s; delete some, or ask the operator to raise the limit", account, limit, what)
}

// checkLimit refuses one more of what when the account has have of them
// already. Callers count and create under the account's change lock
// (exclusive), so that concurrent creates cannot pass the limit together.
func (a *api) checkLimit(ctx context.Context, account, what string, have int) error {
	l, err := a.s.AccountLimits(ctx, account)
	if err != nil {
		return err
	}
	limit := map[string]int{"queues": l.Queues, "functions": l.Functions, "triggers": l.Triggers, "hooks": l.Hooks, "topics": l.Topics}[what]
	if have >= limit {
		return limitExceeded(account, what, int64(limit))
	}
	return nil
}

// deployLimits are the limits of account's functions (DeployWithin).
func (a *api) deployLimits(ctx context.Context, account string) (functions.Limits, error) {
	l, err := a.s.AccountLimits(ctx, account)
	if err != nil {
		return functions.Limits{}, err
	}
	return functions.Limits{Functions: l.Functions, ModuleBytes: l.ModuleBytes}, nil
}

// Accounts' limits are cached this long for the checks made on every
// key-value write (kvQuota) and send (messageBytesLimit); a change made
// by another server process holds here after at most this long.
const (
	limitsCacheTTL  = 5 * time.Second
	limitsCacheSize = 10_000
)

// cachedLimits are account's limits, cached for limitsCacheTTL.
func (s *Server) cachedLimits(ctx context.Context, account string) (AccountLimits, error) {
	return s.cachedLimitsOn(ctx, s.pool, account)
}

// cachedLimitsOn is cachedLimits reading on db when it reads.
func (s *Server) cachedLimitsOn(ctx context.Context, db pgqueue.DB, account string) (AccountLimits, error) {
	l, ok := s.limitsCache.Get(account, time.Now())
	if !ok {
		var err error
		if l, err = s.accountLimitsOn(ctx, db, account); err != nil {
			return l, err
		}
		s.limitsCache.Put(account, l, time.Now())
	}
	return l, nil
}

// kvQuota is account's key-value quota (kv.Stores.WithQuota): its
// KVEntries and KVBytes limits.
func (s *Server) kvQuota(ctx context.Context, account string) (kv.Quota, error) {
	l, err := s.cachedLimits(ctx, account)
	return kv.Quota{Entries: l.KVEntries, Bytes: l.KVBytes}, err
}

// messageBytesLimit is account's limit of stored message bytes
// (pgqueue.Options.StoredBytesLimit): its MessageBytes, read on db, what
// the send runs on.
func (s *Server) messageBytesLimit(ctx context.Context, db pgqueue.DB, account string) (int64, error) {
	l, err := s.cachedLimitsOn(ctx, db, account)
	return l.MessageBytes, err
}

// accountGuestMemory is the bound on account's instances' linear memory
// (triggers.Config.AccountGuestMemory), in bytes: its GuestMemoryMiB.
func (s *Server) accountGuestMemory(ctx context.Context, account string) (int64, error) {
	l, err := s.cachedLimits(ctx, account)
	return l.GuestMemoryMiB << 20, err
}
