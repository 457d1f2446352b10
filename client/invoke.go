package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/sluicehq/sluice/wire"
)

// InvokeOptions pick what Functions.Invoke runs and on what.
type InvokeOptions struct {
	// Alias (default "live") or Version picks the version; set at most
	// one.
	Alias   string
	Version int
	// Bodies are the batch's message bodies (JSON values), or Messages
	// the batch with headers; give one of them (1 to 100 messages, each
	// at most 256 KiB, the request at most 1 MiB).
	Bodies   []json.RawMessage
	Messages []wire.InvokeMessage
	// DryRun returns what the function emitted without sending it.
	DryRun bool
}

// InvokeResult is what an invoke did: each message's outcome, the emits
// and the captured stderr. It is recorded as invocation InvocationID with
// trigger "invoke".
type InvokeResult = wire.InvokeResult

// Invoke runs the deployed function name once on a batch, as a queue
// trigger would run it (scope functions:invoke), and waits for the result.
// Emits are sent unless o.DryRun. A function that fails is no error: see
// the result's Outcome.
func (s *FunctionsService) Invoke(ctx context.Context, name string, o InvokeOptions) (InvokeResult, error) {
	var out InvokeResult
	if err := checkName("function", name); err != nil {
		return out, err
	}
	if o.Alias != "" && o.Version != 0 {
		return out, invalidf("give an alias or a version, not both")
	}
	if len(o.Bodies) > 0 && len(o.Messages) > 0 {
		return out, invalidf("give bodies or messages, not both")
	}
	body := wire.InvokeRequest{Alias: o.Alias, Version: o.Version, Bodies: o.Bodies, Messages: o.Messages, DryRun: o.DryRun}
	err := s.c.do(ctx, request{method: http.MethodPost, path: s.c.managePath("functions", name, "invoke"), body: body}, &out)
	return out, err
}
