// Package sdk is the Go guest SDK for Sluice functions.
//
// A Sluice function is a Go program compiled to WebAssembly for WASI
// preview 1. It registers one handler; Sluice calls it once per batch of
// messages and acks every message the handler does not report as failed:
//
//	package main
//
//	import (
//		"time"
//
//		"github.com/sluicehq/sluice/sdk"
//	)
//
//	func main() {
//		sdk.Handle(func(ctx sdk.Context, b sdk.Batch) sdk.Result {
//			var res sdk.Result
//			for _, m := range b.Messages {
//				var order struct{ ID string `json:"id"` }
//				if err := m.Decode(&order); err != nil {
//					res.Permanent(m.ID, err) // straight to the dead-letter queue
//					continue
//				}
//				if err := ship(order.ID); err != nil {
//					res.Retry(m.ID, 30*time.Second, err) // delivered again in 30 s
//					continue
//				}
//				ctx.Log("shipped", "order", order.ID)
//			}
//			return res
//		})
//	}
//
// # Emitting messages
//
// A handler may send messages onward (Function ABI v1.1): Result.Emit and
// Result.EmitTopic add messages that Sluice sends in the same transaction
// that acks the batch. An emit For a message goes out only if that message
// succeeds; one without For goes out unless the whole batch fails. A crash
// before that commit sends nothing and the batch is redelivered, so a
// pipeline of functions passes each message on exactly once:
//
//	res.Emit(sdk.Emit{Queue: "shipped", Body: order, For: m.ID})
//	res.EmitTopic("audit", event, m.ID)
//
// The function's manifest must allow the targets (emits: [shipped, audit]);
// an emit anywhere else fails the whole batch with invalid_output.
//
// # Building
//
// The same source builds either kind of module of the Function ABI v1:
//
//	GOOS=wasip1 GOARCH=wasm go build -o fn.wasm .                       # command
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o fn.wasm .   # reactor
//
// A command module runs main for every batch in a fresh instance: Handle
// reads the batch from stdin, runs the handler, writes the result to stdout
// and returns. A reactor module is initialised once and then serves many
// batches from the same instance, which is much faster (no Go runtime start
// per batch); package-level state survives between batches of one instance,
// but instances are pooled, replaced at will and never shared, so treat such
// state as a cache only.
//
// Call Handle from main (or from an init function). In a reactor build main
// is not run by the WebAssembly host, so on the first batch the SDK runs
// main itself, in which Handle only records the handler and returns; code
// after Handle in main therefore runs once per instance in a reactor build
// and after the batch in a command build, so keep main to the Handle call.
//
// # Reactor exports
//
// The package exports the two functions of the reactor ABI with
// go:wasmexport (a command build exports them too, unused):
//
//	sluice_alloc(len i32) -> ptr i32
//		returns a guest buffer of len bytes for the host to write the batch
//		into; the buffer stays valid until sluice_handle returns.
//	sluice_handle(ptr i32, len i32) -> i64
//		runs the handler on the batch in [ptr, ptr+len) and returns the
//		output location packed as ptr<<32 | len (0 when there is nothing to
//		report); the output stays valid until the next call into the module.
//
// # Outbound HTTP and key-value stores
//
// Fetch makes an HTTP request through the host (Function ABI v1.1),
// limited to the URLs the manifest lists in allowed_outbound_hosts.
// Package sdk/sdkhttp turns it into an *http.Client, so ordinary net/http
// code (and libraries that take an *http.Client) works; it is a separate
// package because net/http adds about 1.8 MB to every module that links
// it, and most functions make no HTTP calls. Store opens one of the
// key-value stores the manifest lists in stores:
//
//	resp, err := sdkhttp.Client().Get("https://api.example.com/v1/status")
//	resp, err := sdk.Fetch(sdk.HTTPRequest{Method: "GET", URL: "https://api.example.com/v1/status"})
//	n, err := sdk.Store("counts").Increment("visits", 1)
//
// Failed host calls return a *HostError wrapping ErrDenied, ErrInvalid,
// ErrLimit, ErrFailed, ErrNotFound or ErrConflict. Outside WebAssembly
// (tests on the host) every host call fails with ErrFailed.
//
// # Logging
//
// Context.Log and Context.Error write one JSON object per line to stderr;
// the host turns every stderr line into a log event tagged with the
// function, version and invocation id. Anything else written to stderr
// (panics, fmt.Fprintln(os.Stderr, ...)) is logged too, as plain text. In a
// reactor build, writes to stdout are logged the same way, since the output
// travels through sluice_handle's result instead.
//
// The package depends only on the standard library.
package sdk
