package sdk

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestMarshal(t *testing.T) {
	t.Parallel()
	if out := (Result{}).marshal(); out != nil {
		t.Fatalf("empty result marshals to %q, want nothing", out)
	}
	var r Result
	r.Retry("1", 1500*time.Millisecond, errors.New("busy"))
	r.Retry("2", 0, nil)
	r.Permanent("3", errors.New(`bad "input"`))
	want := `{"batchItemFailures":[{"itemIdentifier":"1","retryAfterSeconds":2,"error":"busy"},{"itemIdentifier":"2"},{"itemIdentifier":"3","permanent":true,"error":"bad \"input\""}]}`
	if got := string(r.marshal()); got != want {
		t.Fatalf("marshal =\n%s\nwant\n%s", got, want)
	}
}

func TestRun(t *testing.T) {
	// Not parallel: it sets the package's handler.
	handler = nil
	if _, err := run([]byte(`{}`)); err == nil || !strings.Contains(err.Error(), "no handler") {
		t.Fatalf("run without a handler: %v", err)
	}
	handler = func(ctx Context, b Batch) Result {
		if ctx.Trigger.Source != "emails" || b.Function.Name != "send" || len(b.Messages) != 2 || b.Messages[1].Attempt != 3 {
			t.Errorf("handler got ctx %+v, batch %+v", ctx, b)
		}
		return Retry(b.Messages[0].ID, time.Second, errors.New("later"))
	}
	defer func() { handler = nil }()
	out, err := run([]byte(`{"version":1,"function":{"name":"send","version":2},"trigger":{"type":"queue","source":"emails"},
		"messages":[{"id":"a","attempt":1,"created_at":"2026-11-30T12:00:00Z","headers":null,"body":{}},
		            {"id":"b","attempt":3,"created_at":"2026-11-30T12:00:00Z","headers":{"k":"v"},"body":[1]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"batchItemFailures":[{"itemIdentifier":"a","retryAfterSeconds":1,"error":"later"}]}` {
		t.Fatalf("output %s", out)
	}
	if _, err := run([]byte(`not json`)); err == nil {
		t.Fatal("run accepted a batch that is not JSON")
	}
}

func TestDecodeHeaders(t *testing.T) {
	t.Parallel()
	var h map[string]string
	if err := (Message{ID: "1", Headers: []byte(`{"k":"v"}`)}).DecodeHeaders(&h); err != nil || h["k"] != "v" {
		t.Fatalf("DecodeHeaders: %v, %v", h, err)
	}
	if err := (Message{ID: "2"}).DecodeHeaders(&h); err != nil {
		t.Fatalf("DecodeHeaders without headers: %v", err)
	}
	if err := (Message{ID: "3", Body: []byte(`{`)}).Decode(&h); err == nil || !strings.Contains(err.Error(), "message 3") {
		t.Fatalf("Decode of a bad body: %v", err)
	}
}

func TestMarshalEmits(t *testing.T) {
	t.Parallel()
	var r Result
	r.Retry("2", 0, nil)
	r.Emit(Emit{Queue: "shipped", Body: map[string]int{"order": 1}, Headers: map[string]string{"k": "v"},
		Delay: 1500 * time.Millisecond, DedupKey: "d", For: "1"})
	r.EmitTopic("audit", "done", "")
	want := `{"batchItemFailures":[{"itemIdentifier":"2"}],"emit":[{"queue":"shipped","body":{"order":1},"headers":{"k":"v"},"delay_seconds":2,"dedup_key":"d","for":"1"},{"topic":"audit","body":"done"}]}`
	if got := string(r.marshal()); got != want {
		t.Fatalf("marshal =\n%s\nwant\n%s", got, want)
	}
	var only Result
	only.Emit(Emit{Queue: "q", Body: 1})
	if got := string(only.marshal()); got != `{"emit":[{"queue":"q","body":1}]}` {
		t.Fatalf("marshal = %s", got)
	}
	var bad Result
	bad.Emit(Emit{Queue: "q", Body: func() {}})
	if got := string(bad.marshal()); !strings.HasPrefix(got, "sdk: emit 0 to q: body:") {
		t.Fatalf("marshal of an unmarshalable body = %s", got)
	}
}
