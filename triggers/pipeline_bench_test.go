package triggers_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/triggers"
)

// BenchmarkPipeline drains pipelineMessages messages end to end through
// two functions, A emitting one message per input to B's queue (emit, in
// A's settlement transaction), beside one function draining as many
// without emitting. It reports messages per second end to end, from the
// send of the messages to A (in batches of 1000) until B has acked what A
// emitted for each (the engine is warmed up first, outside the timing).
//
//	TEST_DATABASE_URL=... go test -run '^$' -bench Pipeline -benchtime 1x ./triggers/
func BenchmarkPipeline(b *testing.B) {
	const pipelineMessages = 5000
	for _, bc := range []struct {
		name string
		body string
		// queues holding work: both for the pipeline
		pipeline bool
	}{
		{"single", `{}`, false},
		{"two-stage-emit", `{"emit":[{"queue":"b","body":{"n":1}}]}`, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				b.StopTimer()
				e := newEnv(b)
				e.deploy("relay", "relay", relayCaps("b"))
				e.createQueue("a", pgqueue.Settings{})
				e.createQueue("b", pgqueue.Settings{})
				e.putTrigger(triggers.Trigger{Queue: "a", Function: "relay", BatchSize: 100, Concurrency: 2})
				e.putTrigger(triggers.Trigger{Queue: "b", Function: "relay", BatchSize: 100, Concurrency: 2})
				perMessage := int64(1)
				if bc.pipeline {
					perMessage = 2
				}
				// Warm up: the engine loads (compiles) the function and
				// settles one message, outside the timing.
				e.startEngine()
				e.send("a", bc.body)
				e.waitFor("the warm-up", time.Minute, func() bool {
					return e.scalar(`SELECT coalesce(sum(acked), 0) FROM {{schema}}.invocations`) == perMessage
				})
				bodies := make([]string, pipelineMessages)
				for i := range bodies {
					bodies[i] = bc.body
				}
				b.StartTimer()
				start := time.Now()
				e.send("a", bodies...)
				e.waitFor("the drain", 10*time.Minute, func() bool {
					return e.scalar(`SELECT coalesce(sum(acked), 0) FROM {{schema}}.invocations`) == perMessage*(pipelineMessages+1)
				})
				total += time.Since(start)
			}
			b.ReportMetric(float64(pipelineMessages)*float64(b.N)/total.Seconds(), "msgs/s")
		})
	}
}
