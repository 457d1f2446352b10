// Command webhook-router routes webhook deliveries to a queue per event,
// with emit (Function ABI v1.1). Each message body is a webhook envelope,
// as Sluice's webhook ingestion builds it (triggers/webhook):
//
//	{"hook": "gh", "delivery_id": "72d3162e-…", "method": "POST", "path": "/hooks/acme/gh",
//	 "headers": {"content-type": "application/json", "x-github-event": "push", …},
//	 "body": {…}}
//
// A GitHub delivery (an x-github-event header) goes to github-<event>
// (push, pull_request, release; ping is acked and dropped); a Stripe event
// (a body with "object": "event") goes to stripe-<type> for the types it
// knows (invoice.paid → stripe-invoice-paid …). The emitted message is the
// provider's payload, with the hook and delivery id as headers and the
// delivery id as dedup key, so a provider's redelivery is not passed on
// twice. It goes out only if the delivery is acked, in the same
// transaction. What it cannot route fails permanently and waits in the
// dead-letter queue for inspection. The manifest must allow the queues:
// emits: [github-*, stripe-*].
package main

import (
	"encoding/json"
	"fmt"

	"github.com/sluicehq/sluice/sdk"
)

// envelope is a webhook delivery as the ingestion endpoint stores it.
type envelope struct {
	Hook       string            `json:"hook"`
	DeliveryID string            `json:"delivery_id"`
	Method     string            `json:"method"`
	Path       string            `json:"path"`
	Headers    map[string]string `json:"headers"` // lower-case names
	Body       json.RawMessage   `json:"body"`    // absent when the body is not JSON
	BodyBase64 *string           `json:"body_base64"`
}

// githubQueues maps GitHub events to queues.
var githubQueues = map[string]string{
	"push":         "github-push",
	"pull_request": "github-pull-request",
	"release":      "github-release",
}

// stripeQueues maps Stripe event types to queues.
var stripeQueues = map[string]string{
	"invoice.paid":               "stripe-invoice-paid",
	"invoice.payment_failed":     "stripe-invoice-payment-failed",
	"checkout.session.completed": "stripe-checkout-session-completed",
}

// route returns the queue a delivery goes to ("" to drop it), or why it
// cannot be routed.
func route(e envelope) (string, error) {
	if ev, ok := e.Headers["x-github-event"]; ok {
		if ev == "ping" {
			return "", nil
		}
		if q := githubQueues[ev]; q != "" {
			return q, nil
		}
		return "", fmt.Errorf("webhook-router: unhandled GitHub event %q", ev)
	}
	if e.Body == nil {
		return "", fmt.Errorf("webhook-router: hook %s: a body that is not JSON has no route", e.Hook)
	}
	var ev struct {
		Object string `json:"object"`
		Type   string `json:"type"`
	}
	if err := json.Unmarshal(e.Body, &ev); err == nil && ev.Object == "event" {
		if q := stripeQueues[ev.Type]; q != "" {
			return q, nil
		}
		return "", fmt.Errorf("webhook-router: unhandled Stripe event type %q", ev.Type)
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
			q, err := route(e)
			if err != nil {
				res.Permanent(m.ID, err)
				continue
			}
			if q == "" {
				ctx.Log("dropped", "delivery_id", e.DeliveryID, "hook", e.Hook)
				continue
			}
			out := sdk.Emit{Queue: q, Body: e.Body, For: m.ID,
				Headers: map[string]string{"webhook-hook": e.Hook, "webhook-delivery-id": e.DeliveryID}}
			if id := e.DeliveryID; id != "" && len(e.Hook)+1+len(id) <= 128 {
				out.DedupKey = e.Hook + ":" + id
			}
			res.Emit(out)
			ctx.Log("routed", "delivery_id", e.DeliveryID, "hook", e.Hook, "queue", q)
		}
		return res
	})
}
