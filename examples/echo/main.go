// Command echo logs every message of a batch and acks them all.
package main

import "github.com/sluicehq/sluice/sdk"

func main() {
	sdk.Handle(func(ctx sdk.Context, b sdk.Batch) sdk.Result {
		for _, m := range b.Messages {
			ctx.Log("echo", "id", m.ID, "attempt", m.Attempt, "body", m.Body)
		}
		return sdk.Result{}
	})
}
