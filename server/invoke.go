package server

import (
	"errors"
	"net/http"

	"github.com/sluicehq/sluice/triggers"
	"github.com/sluicehq/sluice/wire"
)

// maxInvokes bounds the invoke calls running at once on one server.
const maxInvokes = 16

// invokeFunction answers POST .../functions/{name}/invoke (scope
// functions:invoke): it runs the function once on the request's batch,
// records the invocation under trigger "invoke" and answers the
// per-message outcomes, the emits and the captured stderr. Emits are sent
// (in the transaction that records the invocation) unless dry_run is set.
// A key limited to queue patterns may only invoke with dry_run: what a
// function emits is not bounded by the key's queues.
//
// At most maxInvokes invocations run at once per server (each loads the
// function and holds its memory), and maxAccountInvokes of one account
// over every server: beyond, 429 with Retry-After.
func (a *api) invokeFunction(w http.ResponseWriter, r *http.Request, c *call) error {
	slot, err := a.slots.hold(r.Context(), c.account, slotInvoke, maxAccountInvokes, 1, "invocations running", "retry in a second")
	if err != nil {
		return err
	}
	defer slot.give()
	select {
	case a.invokes <- struct{}{}:
		defer func() { <-a.invokes }()
	default:
		return tooManyRequests(1, "%d invocations are running on this server: retry in a second", maxInvokes)
	}
	body, err := readJSON(w, r, false)
	if err != nil {
		return err
	}
	var req wire.InvokeRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	if len(req.Messages) > 0 && len(req.Bodies) > 0 {
		return badRequest("give messages or bodies, not both")
	}
	if !c.key.allQueues() && !req.DryRun {
		return c.forbidQueues("the queues a function emits to: invoke with dry_run, or use a key for every queue")
	}
	in := triggers.InvokeRequest{Account: c.account, Function: r.PathValue("name"), Alias: req.Alias, Version: req.Version, DryRun: req.DryRun}
	for _, m := range req.Messages {
		in.Messages = append(in.Messages, triggers.InvokeMessage{Body: m.Body, Headers: m.Headers})
	}
	for _, b := range req.Bodies {
		in.Messages = append(in.Messages, triggers.InvokeMessage{Body: b})
	}
	res, err := a.s.engine.Invoke(r.Context(), in)
	if errors.Is(err, triggers.ErrInvalidInvoke) {
		return badRequest("%s", trimPkg(err))
	}
	if err != nil {
		return err
	}
	out := wire.InvokeResult{InvocationID: res.ID, Function: res.Function, Version: res.Version, Outcome: res.Outcome,
		FailureKind: res.FailureKind, Error: res.Error, DurationMS: float64(res.Duration.Microseconds()) / 1000,
		Messages: make([]wire.InvokeMessageResult, len(res.Messages)), Emits: make([]wire.Emit, len(res.Emits)),
		Emitted: res.Emitted, DryRun: req.DryRun, Stderr: res.Stderr}
	for i, m := range res.Messages {
		out.Messages[i] = wire.InvokeMessageResult{ID: m.ID, Outcome: m.Outcome.String(),
			RetryAfterSeconds: int(m.RetryAfter.Seconds()), Error: m.Error}
	}
	for i, e := range res.Emits {
		out.Emits[i] = wire.Emit{Queue: e.Queue, Topic: e.Topic, Body: e.Body, Headers: e.Headers,
			DelaySeconds: int(e.Delay.Seconds()), DedupKey: e.DedupKey, For: e.For}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
