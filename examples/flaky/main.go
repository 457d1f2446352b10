// Command flaky fails some messages to show partial batch failure: a
// message whose body has "fail_until_attempt": N fails with a retry delay
// until its N-th delivery, then succeeds. Set FLAKY_RETRY_SECONDS to change
// the delay (default 1).
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

func main() {
	delay := time.Second
	if s := os.Getenv("FLAKY_RETRY_SECONDS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			delay = time.Duration(n) * time.Second
		}
	}
	sdk.Handle(func(ctx sdk.Context, b sdk.Batch) sdk.Result {
		var res sdk.Result
		for _, m := range b.Messages {
			var body struct {
				FailUntilAttempt int `json:"fail_until_attempt"`
			}
			_ = m.Decode(&body) // a body that is not an object just succeeds
			if m.Attempt < body.FailUntilAttempt {
				res.Retry(m.ID, delay, fmt.Errorf("flaky: attempt %d of %d fails", m.Attempt, body.FailUntilAttempt))
				continue
			}
			ctx.Log("processed", "id", m.ID, "attempt", m.Attempt)
		}
		return res
	})
}
