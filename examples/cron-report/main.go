// Command cron-report handles cron invocations: each batch carries one
// message whose body is {"schedule": …, "scheduled_time": …}. It logs a
// report line with how late the run started.
package main

import (
	"errors"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// tick is the body of a cron message.
type tick struct {
	Schedule      string    `json:"schedule"`
	ScheduledTime time.Time `json:"scheduled_time"`
}

func main() {
	sdk.Handle(func(ctx sdk.Context, b sdk.Batch) sdk.Result {
		var res sdk.Result
		for _, m := range b.Messages {
			var t tick
			if err := m.Decode(&t); err != nil {
				res.Permanent(m.ID, err)
				continue
			}
			if t.Schedule == "" || t.ScheduledTime.IsZero() {
				res.Permanent(m.ID, errors.New("cron-report: body lacks schedule or scheduled_time"))
				continue
			}
			ctx.Log("report",
				"schedule", t.Schedule,
				"scheduled_time", t.ScheduledTime.Format(time.RFC3339),
				"lag_ms", time.Since(t.ScheduledTime).Milliseconds(),
				"source", ctx.Trigger.Source)
		}
		return res
	})
}
