package wire

import "encoding/json"

// InvokeRequest is the body of POST .../functions/{name}/invoke: run the
// function once on a batch. Give the batch as Messages (bodies with
// headers) or as Bodies (bodies alone), not both; Alias or Version picks
// what runs (default: alias "live").
type InvokeRequest struct {
	Alias    string          `json:"alias,omitempty"`
	Version  int             `json:"version,omitempty"`
	Messages []InvokeMessage `json:"messages,omitempty"`
	// Bodies is a batch of message bodies (any JSON values).
	Bodies []json.RawMessage `json:"bodies,omitempty"`
	// DryRun returns the emits without sending them.
	DryRun bool `json:"dry_run,omitempty"`
}

// InvokeMessage is one message of an InvokeRequest.
type InvokeMessage struct {
	Body    json.RawMessage `json:"body"`
	Headers json.RawMessage `json:"headers,omitempty"`
}

// InvokeResult answers an invoke: how the function did on each message,
// what it emitted and wrote to stderr. The invocation is recorded under
// InvocationID with trigger "invoke".
type InvokeResult struct {
	InvocationID int64   `json:"invocation_id"`
	Function     string  `json:"function"`
	Version      int     `json:"version"`
	Outcome      string  `json:"outcome"`
	FailureKind  string  `json:"failure_kind,omitempty"`
	Error        string  `json:"error,omitempty"`
	DurationMS   float64 `json:"duration_ms"`
	// Messages has each message's outcome in input order: acked, retry
	// (failed) or permanent (failed for good).
	Messages []InvokeMessageResult `json:"messages"`
	// Emits are what the function emitted, as it returned them; Emitted
	// counts those sent (none for a dry run or a failed batch, and none
	// for a message that failed).
	Emits   []Emit `json:"emits"`
	Emitted int    `json:"emitted"`
	DryRun  bool   `json:"dry_run"`
	Stderr  string `json:"stderr"`
}

// InvokeMessageResult is one message's outcome in an InvokeResult.
type InvokeMessageResult struct {
	// ID is the message's id in the function's input: "1", "2", ...
	ID                string `json:"id"`
	Outcome           string `json:"outcome"`
	RetryAfterSeconds int    `json:"retry_after_seconds,omitempty"`
	Error             string `json:"error,omitempty"`
}

// Emit is a message a function emitted (Function ABI v1.1).
type Emit struct {
	Queue        string          `json:"queue,omitempty"`
	Topic        string          `json:"topic,omitempty"`
	Body         json.RawMessage `json:"body"`
	Headers      json.RawMessage `json:"headers,omitempty"`
	DelaySeconds int             `json:"delay_seconds,omitempty"`
	DedupKey     string          `json:"dedup_key,omitempty"`
	For          string          `json:"for,omitempty"`
}
