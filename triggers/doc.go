// Package triggers runs functions when work arrives: queue triggers (batches
// from a queue or its dead-letter queue), cron triggers (a schedule that
// invokes a function or enqueues a message) and the webhook hooks that turn
// HTTP deliveries into messages.
//
// # What it owns
//
// The vocabulary of a trigger — its kinds, ack policies (AckPolicy), batch
// bounds, backoff defaults and the cron spec syntax (ParseSchedule) — and the
// tables that record what triggers are and what they did: triggers,
// invocations and cron_ticks (migrations/). Other packages use the Go API
// (Store, Engine); the app manifest reader (functions/manifest) and the HTTP
// API (server) translate their formats into a Trigger, never the reverse.
//
// # How it runs
//
// An Engine reads the enabled triggers every ReloadInterval and keeps one
// runner per trigger:
//
//   - a dispatcher per queue trigger (dispatcher.go) claims messages with
//     the queue core's receive (woken by the Listener's NOTIFY, polling as
//     a fallback), one receive for several batches of BatchSize and ahead
//     of the running ones (claimLimit), invokes the function's alias on
//     each batch through the WASM runtime on Concurrency workers,
//     extends the batch's leases while it runs, and settles every message
//     by the ack policy: acked, retried after the trigger's backoff, or
//     moved to the DLQ; its two settlers (settler.go) commit the
//     settlements pending at a time in one transaction;
//   - a cron runner per cron trigger (cron.go) schedules every tick in every
//     process; the first process to insert (trigger, scheduled time) into
//     cron_ticks runs it, so each tick runs once however many run.
//
// Every invocation settles in one transaction, sent as one pgx batch (one
// round trip; record.go): its messages' acks, retries and dead letters,
// the messages it emitted (Function ABI v1.1; emit.go checks them against
// the function version's emits capability) and its row in the invocations
// table, so the log's counts are exactly what was done and an emit exists
// if and only if the batch's settlement committed. Stop stops claiming,
// releases the leases of batches claimed but not started, lets running
// batches finish for the grace period, then cuts them short and releases
// their leases, and commits the settlements still pending.
//
// The webhook sub-package verifies signed deliveries (Standard Webhooks,
// GitHub, Stripe) and builds the message envelope.
package triggers
