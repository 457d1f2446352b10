// Package webhook verifies signed webhook requests and turns them into the
// envelopes that Sluice enqueues and functions receive.
//
// The HTTP handler for POST /hooks/{account}/{hook} reads the body (its size
// capped by the caller), verifies it with the hook's [Verifier], builds an
// [Envelope] and enqueues the envelope's JSON, deduplicating on the delivery
// id:
//
//	v, err := webhook.NewVerifier(webhook.SchemeGitHub, newSecret, oldSecret)
//	...
//	d, err := v.Verify(r.Header, body, now)
//	if err != nil { /* errors.Is(err, webhook.ErrSignatureMismatch) ... */ }
//	env, err := webhook.NewEnvelope(hookName, r, body, d)
//	msg, err := env.MarshalJSON() // or json.Marshal(env), which compacts it again
//
// # Schemes
//
//   - standard: Standard Webhooks (standardwebhooks.com), as sent by Svix
//     and others. Headers webhook-id, webhook-timestamp (unix seconds) and
//     webhook-signature, a space-separated list of "v1,<base64>" entries,
//     each an HMAC-SHA256 of "{id}.{timestamp}.{body}". Any one v1 entry
//     matching under any configured secret passes; entries of other versions
//     are ignored. Secrets "whsec_<base64>" are decoded; secrets without the
//     prefix are used as raw bytes. Delivery id: webhook-id.
//   - github: X-Hub-Signature-256 "sha256=<hex HMAC-SHA256 of the body>"
//     (the SHA-1 X-Hub-Signature is not accepted). Delivery id:
//     X-GitHub-Delivery (required); event: X-GitHub-Event.
//   - stripe: Stripe-Signature "t=<unix>,v1=<hex>[,v1=<hex>...]", each v1 an
//     HMAC-SHA256 of "{t}.{body}" keyed by the whole secret string. Delivery
//     id: the event's "id" in the JSON body (required); event: its "type".
//   - none: nothing is verified. Delivery id: Idempotency-Key, else
//     webhook-id, else empty (the message is then not deduplicated).
//
// Signed timestamps (standard, stripe) must be within [DefaultTolerance], 5
// minutes, of the clock in either direction; [Verifier.WithTolerance]
// changes that. The clock is the now argument of [Verifier.Verify], never
// time.Now. MACs are compared in constant time. The signature is checked
// before the timestamp, so [ErrTimestampOutOfTolerance] means an authentic
// but stale (or early) request. Replays inside the tolerance are not this
// package's concern: the queue deduplicates on the delivery id.
//
// Errors wrap one of [ErrUnknownScheme], [ErrInvalidSecret],
// [ErrMissingSignature], [ErrMalformedSignature], [ErrSignatureMismatch],
// [ErrTimestampOutOfTolerance], [ErrMissingDeliveryID] and [ErrBodyTooDeep];
// their messages say what was wrong and what was expected, for example
//
//	webhook: webhook-timestamp 1700000000 is 2h0m0s in the past; allowed skew is 5m0s
//
// and never contain a secret or a received signature.
//
// [SignStandard], [SignGitHub] and [SignStripe] produce the signature
// header values, for tests and clients.
//
// # Envelope
//
// An envelope marshals to this JSON object, which is the body of the queue
// message and so the "body" of each message a function receives:
//
//	{
//	  "hook": "gh",
//	  "delivery_id": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
//	  "method": "POST",
//	  "path": "/hooks/acme/gh",
//	  "headers": {
//	    "content-type": "application/json",
//	    "user-agent": "GitHub-Hookshot/044aadd",
//	    "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
//	    "x-github-event": "push"
//	  },
//	  "body": {"ref": "refs/heads/main"}
//	}
//
// Fields:
//
//   - hook: the hook's name.
//   - delivery_id: the delivery id (see Schemes); "" when there is none.
//   - method: the HTTP method.
//   - path: the request path, without the query string (which may carry
//     tokens).
//   - headers: an object of allow-listed headers, lower-case names, string
//     values (repeated headers joined with ", "): content-type,
//     content-encoding and user-agent when sent, plus per scheme —
//     standard: webhook-id, webhook-timestamp; github: x-github-delivery,
//     x-github-event, x-github-hook-id,
//     x-github-hook-installation-target-id,
//     x-github-hook-installation-target-type; stripe: none more; none:
//     idempotency-key, webhook-id, webhook-timestamp. Authorization, Cookie
//     and signature headers are never included.
//   - body: the request body itself, embedded as a JSON value, when the
//     body is valid UTF-8 JSON (whatever the content-type says).
//   - body_base64: otherwise, the body's bytes in standard base64 ("" for an
//     empty body).
//
// Exactly one of body and body_base64 is present. A JSON body nested deeper
// than [MaxJSONDepth] (64) levels is refused with [ErrBodyTooDeep] instead
// of being enqueued. The time of receipt is not in the envelope: the
// database stamps the message's created_at.
package webhook
