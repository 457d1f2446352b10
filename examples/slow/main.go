// Command slow takes its time: each batch sleeps for the duration in its
// SLOW_DURATION env (a Go duration, default 1s) before acking every message.
// It shows lease extension (a batch that outlives the queue's visibility
// timeout is not redelivered while it runs) and graceful shutdown.
package main

import (
	"os"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

func main() {
	d, err := time.ParseDuration(os.Getenv("SLOW_DURATION"))
	if err != nil || d < 0 {
		d = time.Second
	}
	sdk.Handle(func(ctx sdk.Context, b sdk.Batch) sdk.Result {
		time.Sleep(d)
		ctx.Log("done", "messages", len(b.Messages), "slept_ms", d.Milliseconds())
		return sdk.Result{}
	})
}
