// Command poison fails every message it gets, to show the dead-letter
// queue. By default each failure is retryable (so messages reach the DLQ
// once they hit the queue's receive limit); with POISON_PERMANENT=1 they are
// failed permanently and go to the DLQ at once.
package main

import (
	"errors"
	"os"

	"github.com/sluicehq/sluice/sdk"
)

func main() {
	permanent := os.Getenv("POISON_PERMANENT") == "1"
	sdk.Handle(func(ctx sdk.Context, b sdk.Batch) sdk.Result {
		var res sdk.Result
		for _, m := range b.Messages {
			err := errors.New("poison: this function rejects every message")
			if permanent {
				res.Permanent(m.ID, err)
			} else {
				res.Retry(m.ID, 0, err)
			}
		}
		ctx.Error("rejected batch", "messages", len(b.Messages))
		return res
	})
}
