// Package reliability is Sluice's reliability suite: it runs real `sluice
// serve` processes built from this repository against Postgres, injects
// faults (SIGKILL of a process, an immediate Postgres restart, poison and
// hostile functions, SIGTERM under load, a big backlog) and checks the
// delivery promises written down in RELIABILITY.md:
//
//   - no acknowledged send is lost: every one is run to its end by its
//     function (or, for a message that always fails, reaches the DLQ);
//   - duplicates come only from deliveries without a committed ack;
//   - no lease is held twice: a delivery (message, attempt) runs once, and
//     a redelivery never starts while the previous one still runs;
//   - a message reaches the DLQ after exactly max_receive_count deliveries,
//     with its last error, and is not run after that;
//   - a settle with a stale receipt is refused and leaves the newer lease.
//
// The harness: Env is one scenario's world (a fresh schema with a deployed
// manifest, a folder of logs); Env.StartNode starts `sluice serve` logging
// JSON to a file of its own, which survives a SIGKILL because the process
// writes it unbuffered; the example function examples/record logs one
// "exec" line per message and one "end" line per batch; Env.ReadLogs parses
// every log and Check compares the acknowledged sends with the executions.
// SendN and StartLoad generate load.
//
// `go test ./reliability/` runs a short version of every scenario (part of
// `make test` and CI); `make reliability` (SLUICE_RELIABILITY=full) runs
// the sizes. Each scenario logs its figures with t.Logf.
package reliability
