// Command go-triage is a Sluice function: a message whose body has
// "permanent": true goes to the dead-letter queue at once; one with
// "fail": true is retried after "retry_after" seconds (default 60); every
// other message is acked. Each decision is logged.
package main

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

type body struct {
	Fail       bool   `json:"fail"`
	Permanent  bool   `json:"permanent"`
	RetryAfter *int64 `json:"retry_after"`
	Error      string `json:"error"`
}

func main() {
	sdk.Handle(func(ctx sdk.Context, b sdk.Batch) sdk.Result {
		var res sdk.Result
		for _, m := range b.Messages {
			var v body
			if len(m.Body) > 0 && m.Body[0] == '{' {
				_ = json.Unmarshal(m.Body, &v) // other shapes are acked
			}
			switch {
			case v.Permanent:
				res.Permanent(m.ID, errors.New(or(v.Error, "asked to fail permanently")))
				ctx.Error("permanent", "id", m.ID)
			case v.Fail:
				after := int64(60)
				if v.RetryAfter != nil {
					after = *v.RetryAfter
				}
				res.Retry(m.ID, time.Duration(after)*time.Second, errors.New(or(v.Error, "asked to fail")))
				ctx.Log("retry", "id", m.ID)
			default:
				ctx.Log("acked", "id", m.ID)
			}
		}
		return res
	})
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
