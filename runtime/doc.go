// Package runtime hosts Sluice functions: WebAssembly modules for WASI
// preview 1, run on wazero, one batch of messages per invocation, following
// the Function ABI v1 described below. It knows nothing of queues or
// Postgres: it takes a batch and returns an outcome per message.
//
//	rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: dir, Logger: log})
//	fn, err := rt.Load(ctx, wasm, runtime.FunctionConfig{Name: "send-email", Version: 3,
//		MemoryMiB: 64, Timeout: 10 * time.Second})
//	res, err := fn.Invoke(ctx, runtime.Invocation{ID: "inv-1",
//		Trigger:  runtime.Trigger{Type: "queue", Source: "emails"},
//		Messages: []runtime.Message{{ID: "8412", Attempt: 1, Body: body}}})
//	// err: host problem only (closed, ctx already done, invalid invocation).
//	// res.Failure != nil: the whole batch failed (res.Failure.Kind says how).
//	// else res.Messages[i].Outcome is Acked, Retry (after RetryAfter) or Permanent.
//
// A Runtime owns one wazero runtime and compilation cache shared by all its
// functions; Load compiles a module once per SHA-256 of its bytes, and with
// CompilationCacheDir the machine code is kept on disk for other Runtimes
// and processes. Runtime, Function and Invoke are safe for concurrent use.
//
// # Function ABI v1
//
// One invocation is one batch. The guest reads this input document (built
// from the Invocation; created_at in RFC 3339, headers and body as given,
// null when empty):
//
//	{"version":1,
//	 "function":{"name":"send-email","version":3},
//	 "trigger":{"type":"queue","source":"emails"},
//	 "messages":[{"id":"8412","attempt":1,"created_at":"2026-11-30T12:00:00Z",
//	              "headers":{},"body":{}}]}
//
// and may write an output document; empty output means every message
// succeeded:
//
//	{"batchItemFailures":[{"itemIdentifier":"8412","retryAfterSeconds":60,
//	                       "permanent":false,"error":"smtp 451"}]}
//
// A run that ends well with failures listed acks the other messages and
// retries the listed ones (or fails them permanently); a run that ends
// badly fails the whole batch (see Outcomes). Package runtime/internal/abi
// encodes the input and parses the output.
//
// # Module kinds
//
// Load detects the kind from the exports. A command exports _start: every
// batch gets a fresh instance that reads the input document from stdin and
// writes the output document to stdout, and exits. A reactor exports
// _initialize, sluice_alloc and sluice_handle (and its memory as "memory"):
// an instance is initialised once and then serves batches one at a time:
//
//	ptr := sluice_alloc(len(input))        // (i32) -> i32, a guest buffer
//	                                       // the host writes input there
//	packed := sluice_handle(ptr, len(input)) // (i32, i32) -> i64
//	output := memory[packed>>32 : packed>>32 + packed&0xffffffff]
//
// packed == 0 means empty output (every message succeeded). The output must
// stay readable until the next call into the instance. Idle reactor
// instances are pooled per function (at most PoolSize alive); an instance
// that trapped, exited, timed out, hit its memory limit or broke the
// convention is discarded, never reused. A module exporting both _start and
// the reactor exports is a reactor if it also exports _initialize, else a
// command (a Go command built with the SDK exports the reactor functions
// too, unused).
//
// Load rejects a module that imports anything but wasi_snapshot_preview1
// and sluice functions (with matching signatures), exports neither entry point,
// exports _initialize without both sluice_ exports, imports a table, or
// needs more memory at start than its limit (in linear memory or tables),
// naming the import, export or table at fault. A module on which the
// compiler panics fails to load as an invalid module.
//
// # Host imports (Function ABI v1.1)
//
// Module "sluice" gives guests outbound HTTP and key-value state, both
// denied unless FunctionConfig allows them (docs/function-abi.md has the
// exact signatures and documents):
//
//	result_read(buf_ptr, buf_len) -> len         the last call's result
//	http_request(req_ptr, req_len, resp_len_ptr) -> errno
//	kv_open(name_ptr, name_len, handle_ptr) -> errno
//	kv_get(store, key_ptr, key_len, val_len_ptr) -> errno
//	kv_set(store, key_ptr, key_len, val_ptr, val_len, ttl_ms i64) -> errno
//	kv_delete(store, key_ptr, key_len) -> errno
//	kv_increment(store, key_ptr, key_len, delta i64, value_ptr) -> errno
//	kv_compare_and_set(store, key_ptr, key_len, old_ptr, old_len,
//	                   new_ptr, new_len, flags, ttl_ms i64) -> errno
//
// HTTP goes only to FunctionConfig.AllowedOutboundHosts (Spin's
// convention), through a dialer that refuses loopback, private and
// link-local peers unless the URL's host is listed exactly, so DNS cannot
// rebind an allowed name onto the host's network. Each request is capped
// by HTTPRequestTimeout and the batch's deadline, its response body by
// MaxHTTPResponseBytes, and an invocation's requests by MaxHTTPRequests.
// Key-value calls go to FunctionConfig.KV (package kv over Postgres, bound
// to the function's account by the caller) for the stores in Stores.
// While a guest waits on the host it gives back its long slot (see
// scheduler.go) and takes one again afterwards; the wait counts toward its
// timeout. Result.Host counts the calls, bytes and errors.
//
// # Sandbox and limits
//
// Guests get no filesystem (no preopens), no sockets (HTTP only through
// the host import above), real wall and
// monotonic clocks, crypto/rand randomness, args [name] and exactly the
// environment of FunctionConfig.Env. Per function:
//
//   - MemoryMiB caps linear memory: growth past it is refused, and a module
//     that then exits or traps fails with FailureMemoryLimit. The host only
//     ever allocates up to the limit per instance. Tables count too: wazero
//     holds 8 bytes of host memory per entry, so their initial entries
//     must fit the limit, and Load lowers their maxima so that table.grow
//     cannot take them, all together, past it.
//   - Config.GuestMemoryPerAccount and Config.GuestMemory bound the linear
//     memory that the instances of one FunctionConfig.Account, and all
//     instances of the Runtime, hold at once: growth past either is
//     refused the same way (FailureMemoryLimit naming the bound), and an
//     instance whose initial memory does not fit fails at start.
//   - Timeout caps a batch's wall-clock time, instantiation included; the
//     caller's ctx and Runtime.Close stop a batch the same way
//     (FailureCanceled). See "Stopping guests" below.
//   - MaxStdoutBytes (default 1 MiB) caps the output; a command writing more
//     is stopped at once (FailureOutputTooLarge).
//   - MaxStderrBytes (default 64 KiB) caps the stderr kept and logged per
//     batch; the excess is dropped and a marker line says how much.
//
// # Stopping guests
//
// Compiled WebAssembly cannot be preempted by Go: a guest that never calls
// the host can neither be stopped nor let the Go runtime stop the world for
// a collection, which stalls the whole process. Load therefore rewrites
// every module before compiling it (package runtime/internal/guard):
//
//   - A module importing wasi_snapshot_preview1.sched_yield (every Go
//     module does) gets a countdown at each function entry and loop head
//     that calls sched_yield every 4096 steps. The host's sched_yield
//     unwinds the guest with an exit error once the batch must stop. Cost:
//     a few instructions per step, one host call per period.
//   - Any other module runs on a wazero runtime with WithCloseOnContextDone,
//     which checks at every loop head by calling into Go (several times
//     slower), plus an empty loop inserted at every function entry so that
//     loop-free call trees are checked too.
//
// Guest sleeps (poll_oneoff) are cut short when the batch must stop.
//
// # Outcomes
//
// Result.Messages has one entry per input message, in order. When the run
// succeeded, messages named in batchItemFailures are Retry (RetryAfter from
// retryAfterSeconds, clamped to 0..12h) or Permanent, the rest Acked,
// and Result.Emits holds the output's emit entries (ABI v1.1), shape
// checked: one of queue or topic, a body, no group (ordered groups do not
// exist yet), at most 1,000, each `for` naming a message of the batch; a
// bad entry fails the batch with invalid_output naming it. The runtime
// sends nothing: the caller decides which emits may go (capabilities) and
// sends them when it settles the batch. Otherwise Result.Failure says why the whole batch failed, every message
// is Retry with RetryAfter 0 (the caller applies its backoff), and
// Failure.Message is one line fit for a log and a dead-letter row:
//
//	exit_code         non-zero exit (a Go panic is status 2; the message
//	                  quotes the panic line), whatever the status: one
//	                  that wazero uses for a done context counts as
//	                  canceled or timeout only if the context really is
//	trap              unreachable, out-of-bounds access, stack exhausted…
//	timeout           past the function's Timeout or the caller's deadline
//	canceled          the caller's ctx was canceled
//	memory_limit      failed after memory growth past MemoryMiB was refused
//	output_too_large  output over MaxStdoutBytes
//	invalid_output    output not ABI JSON (or a reactor broke the calling
//	                  convention)
//	unknown_item      an itemIdentifier not in the batch
//
// # Logs
//
// Every stderr line becomes an event on Config.Logger with the keys
// function, version, invocation and trigger ("type:source") and stream
// ("stderr", or "stdout" for what a reactor prints). A line that is a JSON
// object (as the sdk's Context.Log writes) keeps its level, message and
// fields; other lines are logged at info level.
//
// # Files
//
// The package is laid out by concern:
//
//	runtime.go     Runtime: wazero engines, compile cache, Close
//	config.go      Kind, FunctionConfig and its defaults and bounds
//	load.go        Runtime.Load: ABI inspection of imports, exports, memory
//	function.go    Function: Invoke, running a command or a reactor, Close
//	pool.go        instances: creation, the reactor pool, discarding
//	scheduler.go   sched_yield turns, long slots, guest sleeps, confinement
//	classify.go    how a run ended -> BatchFailure; output -> outcomes
//	invocation.go  Invocation, Message and the input document
//	result.go      Result, Outcome, FailureKind
//	iosink.go      per-invocation stdout/stderr capture and logging
//	host.go        module "sluice": host call state, errnos, HTTP and KV calls
//	outbound.go    allowed_outbound_hosts rules, the checking dialer
//	kv.go          KV, the key-value service a caller injects
//	memory.go      limited, accounted and recycled linear memories
//	priority_*.go  lowering the thread priority of long-running guests
//	cgroup_linux.go  moving their threads into Config.LongGuestCgroup
//	internal/abi   ABI JSON encoding and output parsing
//	internal/guard the module rewrite that lets the host stop guests
package runtime
