package triggers_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/triggers"
)

// syncBuffer is a log sink safe for the engine's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestTriggerNotStartedLoggedOncePerMinute: triggers that cannot start (a
// missing function) are retried at every reload but logged once a minute
// each, not at every reload.
func TestTriggerNotStartedLoggedOncePerMinute(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createQueue("q", pgqueue.Settings{})
	for _, name := range []string{"a", "b", "c"} {
		e.putTrigger(triggers.Trigger{Name: name, Queue: "q", Function: "missing"})
	}
	var logs syncBuffer
	e.startEngine(func(c *triggers.Config) {
		c.ReloadInterval = 50 * time.Millisecond
		c.Logger = zerolog.New(&logs).Level(zerolog.WarnLevel)
	})
	time.Sleep(1500 * time.Millisecond) // some 30 reloads
	if n := strings.Count(logs.String(), "trigger not started"); n != 3 {
		t.Fatalf("%d \"trigger not started\" lines for 3 triggers over ~30 reloads, want 3:\n%s", n, logs.String())
	}
}
