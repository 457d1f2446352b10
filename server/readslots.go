package server

import "sync"

// readSlots are the slots of one kind of read the server holds in memory
// at once (webhook bodies, peek and dead-letter pages): one token per
// read, and each holder's part of them.
type readSlots struct {
	tokens chan struct{}
	shares readShares
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
	}, "", false
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
