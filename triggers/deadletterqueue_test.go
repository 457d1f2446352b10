package triggers_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/triggers"
)

// A queue with a dead_letter_queue: reject_on_error moves the failed
// message into that queue (not the dead-letter table), where another
// trigger processes it like any message.
func TestRejectOnErrorIntoDeadLetterQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("poison", "poison", functions.Config{})
	e.deploy("noop", "noop", functions.Config{})
	e.createQueue("strict-dead", pgqueue.Settings{})
	e.createQueue("strict", pgqueue.Settings{MaxReceiveCount: 5, DeadLetterQueue: "strict-dead"})
	e.send("strict", `{"b":1}`)
	e.putTrigger(triggers.Trigger{Queue: "strict", Function: "poison", AckPolicy: "reject_on_error"})
	e.putTrigger(triggers.Trigger{Queue: "strict-dead", Function: "noop"})
	e.startEngine()

	e.waitFor("the dead letter processed in its queue", 30*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE function = 'noop' AND outcome = 'success'`) == 1 &&
			e.scalar(`SELECT count(*) FROM {{schema}}.messages`) == 0
	})
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.dead_letters`); got != 0 {
		t.Errorf("dead-letter table holds %d, want 0", got)
	}
}
