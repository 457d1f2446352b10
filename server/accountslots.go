package server

import "sync"

// Per account and per process, bounds on what an account holds at once:
// beyond them a request gets 429 with Retry-After (SECURITY.md).
const (
	// maxAccountDeploys is how many deploys of one account may compile
	// at once (each holds its module, up to maxModuleBytes, and a
	// compilation of up to deployTimeout).
	maxAccountDeploys = 4
	// maxAccountLogStreams is how many log streams of one account may be
	// open at once (each polls the invocation log).
	maxAccountLogStreams = 16
)

// accountSlots counts what each account holds at once in this process.
// The zero value holds nothing.
type accountSlots struct {
	mu   sync.Mutex
	held map[string]int
}

// take holds one slot of account, unless it holds max already.
func (s *accountSlots) take(account string, max int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[account] >= max {
		return false
	}
	if s.held == nil {
		s.held = map[string]int{}
	}
	s.held[account]++
	return true
}

// give returns a slot that take held.
func (s *accountSlots) give(account string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[account]--; s.held[account] <= 0 {
		delete(s.held, account)
	}
}
