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
	mu     sync.Mutex
	freed  chan struct{} // closed when a slot is given back, if a take waits
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
		s.mu.Lock()
		if s.freed != nil {
			close(s.freed) // wake the takes waiting for a slot
			s.freed = nil
		}
		s.mu.Unlock()
	}, "", false
}

// takeWithin is take, waiting up to d (or until ctx is done) for a slot
// or a share given back.
func (s *readSlots) takeWithin(ctx context.Context, keys []string, max []int, d time.Duration) (give func(), refused string, full bool) {
	timeout := time.NewTimer(d)
	defer timeout.Stop()
	for {
		s.mu.Lock()
		if s.freed == nil {
			s.freed = make(chan struct{})
		}
		freed := s.freed
		s.mu.Unlock()
		if give, refused, full = s.take(keys, max); give != nil {
			return give, "", false
		}
		select {
		case <-freed:
		case <-timeout.C:
			return nil, refused, full
		case <-ctx.Done():
			return nil, refused, full
		}
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
	freed        chan struct{} // closed when bytes are given back, if a take waits
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
	var timeout <-chan time.Time
	for {
		h.mu.Lock()
		held := h.byAccount[account]
		accountFull = held > 0 && held+n > h.share
		serverFull = !accountFull && h.total > 0 && h.total+n > h.limit
		if !accountFull && !serverFull {
			h.addLocked(account, n)
			h.mu.Unlock()
			return false, false
		}
		if h.freed == nil {
			h.freed = make(chan struct{})
		}
		freed := h.freed
		h.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(d)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-freed:
		case <-timeout:
			return accountFull, serverFull
		case <-ctx.Done():
			return accountFull, serverFull
		}
	}
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
	if n < 0 && h.freed != nil {
		close(h.freed) // wake the takes waiting for room
		h.freed = nil
	}
}
