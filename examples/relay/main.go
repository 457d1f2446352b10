// Command relay emits what its messages ask it to (Function ABI v1.1), for
// the tests of emit and as a small example of sdk.Result.Emit. A message
// body may hold:
//
//	{"emit": [{"queue": "out", "body": {...}, "group": "g"}, {"topic": "audit", "body": 1, "batch": true}],
//	 "fail": "retry" | "permanent" | "batch", "sleep_first_ms": 2000}
//
// Each emit entry goes out For its message ("batch": true: for the batch
// as a whole); "fail" fails the message (or, "batch", the whole batch by
// exiting non-zero) after asking for its emits, which are then dropped;
// "sleep_first_ms" sleeps that long on the message's first delivery.
// On a cron tick it emits {"scheduled_time": ...} to the queue named by
// RELAY_CRON_QUEUE.
package main

import (
	"encoding/json"
	"errors"
	"os"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

type steer struct {
	Emit []struct {
		Queue   string            `json:"queue"`
		Topic   string            `json:"topic"`
		Body    json.RawMessage   `json:"body"`
		Headers map[string]string `json:"headers"`
		Group   string            `json:"group"`
		Batch   bool              `json:"batch"`
	} `json:"emit"`
	Fail         string `json:"fail"`
	SleepFirstMS int    `json:"sleep_first_ms"`
}

func main() {
	sdk.Handle(func(ctx sdk.Context, b sdk.Batch) sdk.Result {
		var res sdk.Result
		if ctx.Trigger.Type == "cron" {
			var tick struct {
				ScheduledTime string `json:"scheduled_time"`
			}
			_ = b.Messages[0].Decode(&tick)
			res.Emit(sdk.Emit{Queue: os.Getenv("RELAY_CRON_QUEUE"), Body: tick})
			return res
		}
		for _, m := range b.Messages {
			var s steer
			_ = m.Decode(&s) // a body that is not an object emits nothing
			for _, e := range s.Emit {
				forID := m.ID
				if e.Batch {
					forID = ""
				}
				res.Emit(sdk.Emit{Queue: e.Queue, Topic: e.Topic, Body: e.Body, Headers: e.Headers, Group: e.Group, For: forID})
			}
			if m.Attempt == 1 && s.SleepFirstMS > 0 {
				time.Sleep(time.Duration(s.SleepFirstMS) * time.Millisecond)
			}
			switch s.Fail {
			case "retry":
				res.Retry(m.ID, 0, errors.New("relay: asked to fail"))
			case "permanent":
				res.Permanent(m.ID, errors.New("relay: asked to fail for good"))
			case "batch":
				os.Exit(3)
			}
		}
		return res
	})
}
