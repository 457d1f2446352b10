// Command webhook-router routes webhook deliveries. Each message body is a
// webhook envelope:
//
//	{"hook": "github", "delivery_id": "…", "method": "POST", "path": "/hooks/github",
//	 "headers": {"X-GitHub-Event": ["push"]}, "body": {…}}
//
// (or "body_base64" for a body that is not JSON). It picks a route from the
// hook name and event header, logs it, and fails permanently what it cannot
// route, so unknown events land in the dead-letter queue for inspection.
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/sdk"
)

// envelope is a webhook delivery as the ingestion endpoint stores it.
type envelope struct {
	Hook       string              `json:"hook"`
	DeliveryID string              `json:"delivery_id"`
	Method     string              `json:"method"`
	Path       string              `json:"path"`
	Headers    map[string][]string `json:"headers"`
	Body       json.RawMessage     `json:"body"`
	BodyBase64 string              `json:"body_base64"`
}

// header returns the first value of header k, matched case-insensitively.
func (e envelope) header(k string) string {
	return http.Header(e.Headers).Get(k)
}

// route names where a delivery goes, or fails.
func route(e envelope) (string, error) {
	switch e.Hook {
	case "github":
		ev := e.header("X-GitHub-Event")
		switch ev {
		case "push", "pull_request", "release":
			return "github." + ev, nil
		case "ping":
			return "ignore", nil
		}
		return "", fmt.Errorf("webhook-router: unhandled GitHub event %q", ev)
	case "stripe":
		var ev struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(e.Body, &ev); err != nil || ev.Type == "" {
			return "", fmt.Errorf("webhook-router: Stripe body lacks a type")
		}
		return "stripe." + strings.SplitN(ev.Type, ".", 2)[0], nil
	}
	if e.BodyBase64 != "" {
		raw, err := base64.StdEncoding.DecodeString(e.BodyBase64)
		if err != nil {
			return "", fmt.Errorf("webhook-router: body_base64: %w", err)
		}
		return fmt.Sprintf("raw.%s (%d bytes)", e.Hook, len(raw)), nil
	}
	return "", fmt.Errorf("webhook-router: no route for hook %q", e.Hook)
}

func main() {
	sdk.Handle(func(ctx sdk.Context, b sdk.Batch) sdk.Result {
		var res sdk.Result
		for _, m := range b.Messages {
			var e envelope
			if err := m.Decode(&e); err != nil {
				res.Permanent(m.ID, err)
				continue
			}
			r, err := route(e)
			if err != nil {
				res.Permanent(m.ID, err)
				continue
			}
			ctx.Log("routed", "delivery_id", e.DeliveryID, "hook", e.Hook, "method", e.Method, "path", e.Path, "route", r)
		}
		return res
	})
}
