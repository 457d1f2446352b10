package triggers_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/triggers"
)

// A guest exiting with wazero's status for a canceled context or a passed
// deadline (proc_exit(0xFFFFFFFF), proc_exit(0xEFFFFFFF)) is not taken for
// a server shutdown: the batch fails with exit_code, is recorded, and its
// message waits out the trigger's backoff before the next delivery, then
// dead-letters with that error.
func TestSpoofedCancelExitIsAnExitFailure(t *testing.T) {
	t.Parallel()
	for _, code := range []int32{-1, -268435457} {
		t.Run(fmt.Sprintf("%#x", uint32(code)), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.deploy("runtime/testdata/hostile", "spoof", functions.Config{})
			e.createQueue("jobs", pgqueue.Settings{MaxReceiveCount: 2})
			e.send("jobs", fmt.Sprintf(`{"do":"exit","code":%d}`, code))
			const backoff = 2 * time.Second
			e.putTrigger(triggers.Trigger{Queue: "jobs", Function: "spoof", BatchSize: 1,
				BackoffInitial: backoff, BackoffMax: backoff})
			e.startEngine()

			e.waitFor("an exit_code invocation record", 30*time.Second, func() bool {
				return e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE failure_kind = 'exit_code'`) >= 1
			})
			// The backoff holds the message back: no redelivery at once.
			time.Sleep(backoff / 2)
			if got := e.scalar(`SELECT coalesce(sum(receive_count), 0) FROM {{schema}}.messages`) +
				e.scalar(`SELECT count(*) FROM {{schema}}.dead_letters`); got > 1 {
				t.Fatalf("delivered again within %s of the failure (receive_count %d), want the backoff", backoff/2, got)
			}
			e.waitFor("the message in the DLQ", 30*time.Second, func() bool {
				return e.scalar(`SELECT count(*) FROM {{schema}}.dead_letters`) == 1
			})
			want := fmt.Sprintf("%%status %d%%", uint32(code))
			if got := e.scalar(`SELECT count(*) FROM {{schema}}.dead_letters WHERE last_error LIKE $1`, want); got != 1 {
				t.Errorf("dead letter without the exit status in its error (want %s)", want)
			}
			e.waitFor("an exit_code invocation record per delivery", 10*time.Second, func() bool {
				return e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE failure_kind = 'exit_code'`) == 2
			})
		})
	}
}
