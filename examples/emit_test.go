package examples_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/sluicehq/sluice/runtime"
)

// A plain WASI guest written in C, without the Go SDK, emits (Function ABI
// v1.1) through the C SDK's sluice_emit and sluice_emit_topic, as a
// reactor and as a command.
func TestCEmit(t *testing.T) {
	t.Parallel()
	for _, l := range []lang{
		{"c-relay", runtime.Reactor, script("c", "c-relay")},
		{"c-relay-command", runtime.Command, script("c", "c-relay", "MODE=command")},
	} {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			fn, err := newRuntime(t).Load(ctx, wasm(t, l), runtime.FunctionConfig{Name: "relay", Version: 1, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer fn.Close(ctx)
			if fn.Kind() != l.kind {
				t.Fatalf("kind = %v, want %v", fn.Kind(), l.kind)
			}
			at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
			res, err := fn.Invoke(ctx, runtime.Invocation{ID: "inv-1", Trigger: runtime.Trigger{Type: "queue", Source: "in"},
				Messages: []runtime.Message{
					{ID: "1", Attempt: 1, CreatedAt: at, Body: json.RawMessage(`{"to":"shipped","order":"é \"1\""}`)},
					{ID: "2", Attempt: 1, CreatedAt: at, Body: json.RawMessage(`{"to":"shipped","fail":true}`)},
					{ID: "3", Attempt: 1, CreatedAt: at, Body: json.RawMessage(`{"n":3}`)},
				}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Failure != nil {
				t.Fatalf("batch failed: %v\n%s", res.Failure, res.Stderr)
			}
			if res.Messages[0].Outcome != runtime.Acked || res.Messages[1].Outcome != runtime.Retry || res.Messages[2].Outcome != runtime.Acked {
				t.Fatalf("outcomes = %+v", res.Messages)
			}
			if len(res.Emits) != 3 {
				t.Fatalf("emits = %+v, want 3", res.Emits)
			}
			var body map[string]string
			if err := json.Unmarshal(res.Emits[0].Body, &body); err != nil || body["order"] != `é "1"` {
				t.Errorf("emit[0] body = %s (%v)", res.Emits[0].Body, err)
			}
			if e := res.Emits[0]; e.Queue != "shipped" || e.For != "1" {
				t.Errorf("emit[0] = %+v, want to shipped for 1", e)
			}
			if e := res.Emits[1]; e.Queue != "shipped" || e.For != "2" {
				t.Errorf("emit[1] = %+v, want to shipped for 2", e)
			}
			if e := res.Emits[2]; e.Topic != "audit" || e.For != "" || string(e.Body) != `{"relayed":true}` {
				t.Errorf("emit[2] = %+v, want the audit publish for the batch", e)
			}
		})
	}
}
