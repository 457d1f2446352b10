package server

import (
	"context"
	"sync"
	"time"
)

// readSlots are the slots of one kind of read the server holds in memory
// at once (webhook bodies, peek and dead-letter pages): one token per
// read, and each holder's part of them.
type readSlots struct {
	tokens chan struct{}
	shares readShares
	freed  giveBacks // a slot given back
}

// newReadSlots returns n slots.
func newReadSlots(n int) *readSlots { return &readSlots{tokens: make(chan struct{}, n)} }

// take holds one slot and one share of each key, each within its max,
// without waiting. It returns the key whose share is used up, or full
// when every slot is held; else give, which gives both back.
func (s *readSlots) take(keys []string, max []int) (give func(), refused string, full bool) {
	if k := s.shares.take(keys, max); k != "" {
		return nil, k, false
	}
	select {
	case s.tokens <- struct{}{}:
	default:
		s.shares.give(keys)
		return nil, "", true
	}
	return func() {
		<-s.tokens
		s.shares.give(keys)
		s.freed.wake()
	}, "", false
}

// takeWithin is take, waiting up to d (or until ctx is done) for a slot
// or a share given back.
func (s *readSlots) takeWithin(ctx context.Context, keys []string, max []int, d time.Duration) (give func(), refused string, full bool) {
	s.freed.retry(ctx, d, func() bool {
		give, refused, full = s.take(keys, max)
		return give != nil
	})
	return give, refused, full
}

// holdFor takes one of the slots for account, which holds a quarter of
// them at most (one at least), waiting up to wait for one given back; or
// it answers 429 with Retry-After, with accountFull (formatted with the
// account's share) or serverFull (with the server's slots). The caller
// gives the slot back with the returned func.
func (s *readSlots) holdFor(ctx context.Context, account string, wait time.Duration, accountFull, serverFull string) (give func(), err error) {
	n := cap(s.tokens)
	give, k, full := s.takeWithin(ctx, []string{account}, []int{share(n, 4)}, wait)
	switch {
	case k != "":
		return nil, tooManyRequests(1, accountFull, share(n, 4))
	case full:
		return nil, tooManyRequests(1, serverFull, n)
	}
	return give, nil
}

// giveBacks wakes what waits for something given back (a slot, bytes).
// The zero value is ready.
type giveBacks struct {
	mu sync.Mutex
	ch chan struct{} // closed at the next give-back, while anyone waits
}

// retry calls try until it succeeds, again after each give-back, for up
// to d or until ctx is done; it reports whether try succeeded.
func (g *giveBacks) retry(ctx context.Context, d time.Duration, try func() bool) bool {
	timeout := time.NewTimer(d)
	defer timeout.Stop()
	for {
		// The channel is taken before try, so that a give-back between
		// a failed try and the wait is not missed.
		g.mu.Lock()
		if g.ch == nil {
			g.ch = make(chan struct{})
		}
		next := g.ch
		g.mu.Unlock()
		if try() {
			return true
		}
		select {
		case <-next:
		case <-timeout.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// wake wakes every retry waiting.
func (g *giveBacks) wake() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
}

// share is a holder's part of the n slots: n/div, at least one.
func share(n, div int) int { return max(1, n/div) }

// readShares counts the read slots of one kind held by each holder (a
// client address, an account), so that no one holder takes every slot of
// the server: the webhook read slots, taken before anyone is
// authenticated, by client address and by the account whose hooks are
// called; the page read slots by account.
type readShares struct {
	mu   sync.Mutex
	held map[string]int
}

// take holds one share of each key, each within its max, and returns the
// key refused ("" when it took them all).
func (s *readShares) take(keys []string, max []int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, k := range keys {
		if s.held[k] >= max[i] {
			return k
		}
	}
	if s.held == nil {
		s.held = map[string]int{}
	}
	for _, k := range keys {
		s.held[k]++
	}
	return ""
}

// give releases what take held.
func (s *readShares) give(keys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		if s.held[k]--; s.held[k] <= 0 {
			delete(s.held, k)
		}
	}
}

// heldBytes counts the bytes of messages the server's receives hold, in
// all and by account, against a bound and each account's quarter of it
// (Config.ReceiveBytes): what a claim may take while it runs, what it
// took until its answer is written.
type heldBytes struct {
	limit, share int64
	mu           sync.Mutex
	total        int64
	byAccount    map[string]int64
	freed        giveBacks // bytes given back
}

// newHeldBytes returns a count bounded by limit, of which one account
// holds a quarter.
func newHeldBytes(limit int64) *heldBytes {
	return &heldBytes{limit: limit, share: max(1, limit/4)}
}

// take counts n more bytes of account's once that takes neither the
// account past its share nor the server past its bound, waiting up to d
// (or until ctx is done) for others to give back enough; when it cannot,
// it counts nothing and says which bound was in the way. An account or a
// server holding nothing may take any n, so that a claim larger than a
// bound is not refused for good.
func (h *heldBytes) take(ctx context.Context, account string, n int64, d time.Duration) (accountFull, serverFull bool) {
	h.freed.retry(ctx, d, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		held := h.byAccount[account]
		accountFull = held > 0 && held+n > h.share
		serverFull = !accountFull && h.total > 0 && h.total+n > h.limit
		if accountFull || serverFull {
			return false
		}
		h.addLocked(account, n)
		return true
	})
	return accountFull, serverFull
}

// add counts n bytes of account's whatever the bounds (a negative n
// gives them back).
func (h *heldBytes) add(account string, n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.addLocked(account, n)
}

func (h *heldBytes) addLocked(account string, n int64) {
	if h.byAccount == nil {
		h.byAccount = map[string]int64{}
	}
	h.total += n
	if h.byAccount[account] += n; h.byAccount[account] <= 0 {
		delete(h.byAccount, account)
	}
	if n < 0 {
		h.freed.wake()
	}
}
