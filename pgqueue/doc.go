// Package pgqueue is Sluice's Postgres queue core: the tables, the SQL API
// any Postgres client can call, and a Go API over the same operations.
//
// # Setup
//
// Apply the migrations once (idempotent, safe from several processes), then
// build a Client over a pgx pool:
//
//	err := migrate.Up(ctx, pool, "sluice", pgqueue.Migrations)
//	c, err := pgqueue.New(pool, pgqueue.Options{Schema: "sluice"})
//
// `sluice migrate` does the first step from the command line. A process
// that long-polls also runs one Listener and passes it in Options; a
// process that is the runtime also runs a Sweeper.
//
// # Semantics
//
// A message is a JSON body (plus optional JSON headers) with a sequence
// that increases within its queue. Receive claims ready messages with FOR
// UPDATE SKIP LOCKED in (visible_at, sequence) order, increments their
// receive count, leases them for the visibility timeout and returns a fresh
// Receipt per lease. ReceivePending returns the same claim as soon as the
// statement has run, while its commit flushes to disk, for a consumer that
// starts work at once and settles only after the commit (the trigger
// dispatcher). Delete/Ack with the receipt settles the message; a
// stale receipt (the message was received again since) is refused and the
// newer lease stays intact. Nack makes messages visible again after a
// delay, recording their last error. A message is delivered at most
// max_receive_count times: when its last lease expires without a delete, the
// sweeper moves it to the dead-letter queue (reason "max_receive_count",
// last error kept). Fail moves messages to the DLQ at once. Dead letters
// can be read, deleted, purged and redriven (back into the queue with the
// receive count reset). Messages may carry an expiration (never delivered
// after it) and a dedup key (a repeat send within the queue's dedup window,
// 5 minutes by default, returns the first sequence and stores nothing).
// Topics copy a published message into every subscribed queue in one
// transaction, optionally filtered per subscription on exact header values
// (SubscribeWith, evaluated in SQL); PublishBatch publishes several with
// headers and delays. A queue's DeadLetterQueue setting sends its dead
// letters (sweeper, Fail) into another queue as new messages, with a
// "sluice_dead_letter" header naming where and why they died, instead of
// the dead-letter table. All times come from the database clock.
//
// The SQL API (introduced in migrations/001_queue_core.up.sql; several
// functions were replaced since, the highest-numbered migration defining
// one is the one in force) names are the public contract: sluice.create_queue, send, send_batch, receive, delete,
// set_visibility, peek, purge, receive_dlq, delete_dlq, purge_dlq, redrive,
// sweep, create_topic, subscribe, unsubscribe, publish and the
// queue_stats view. They act on the default account 000000000001; the
// account_* functions take the account number first and are what the Go
// API calls. Migration 002 adds account_peek_after and
// account_receive_dlq_after (pages in sequence order after a given
// sequence) and account_redrive_sequences (redrive chosen dead letters);
// 003 adds the per-minute statistics (queue_minutes, sample_depths).
// 004 adds per-message options to batches and receive with delete:
//
//	sluice.send_entries(queue text, entries jsonb) -> SETOF bigint
//	    entries: a JSON array of 1-1000 objects {"body": any JSON value but
//	    null, "headers": {"k": "v"}, "delay_seconds": 0-43200,
//	    "expires_in_seconds": 1-1209600, "dedup_key": "1-128 characters"}
//	    (all but body optional); all or none are stored; sequences in order
//	sluice.receive_delete(queue text, max_messages int DEFAULT 1)
//	    -> same columns as receive, receipt NULL: the messages are claimed
//	    and deleted in one statement (at most once)
//
// with account_send_entries and account_receive_delete as their account
// forms (the Client calls them by queue id on its pool, queue_receive_delete
// and queue_send_batch below, and by name, account_receive_delete and
// account_send_batch, in a caller's transaction or a Batch; SendBatch
// carries each NewMessage's options).
// 005 adds subscription filters and sources, delete_topic, publish_batch,
// list_topics (and their account_ forms) and the dead_letter_queue queue
// option; 006 adds the require_receipt setting
// (account_set_require_receipt(p_account, p_queue, p_on); it is not a
// create_queue or update_queue option; since 023 batch acks honour it
// too). 008 adds ordered
// groups (docs/ordered.md): a message may carry a group key
// (NewMessage.Group; sluice.send(..., group_key => 'k'), send_batch's
// group_key, send_entries' "group"), and within a group messages are
// delivered in sequence order, one at a time. Only a group's head is
// receivable; the others wait with visible_at = 'infinity' (their own
// visibility in ready_at), so receive's index walk never visits them, and
// triggers on messages hand the group on (message_groups holds each
// group's count and serializes its sends). The fifo queue option requires
// a group on every send; queue_stats gains groups, groups_inflight,
// groups_blocked and grouped_waiting; received, peeked and dead messages
// carry group_key.
//
// 014 keys the hot path by queue id, so that Citus can run each call on
// the worker holding the queue's shard (docs/scale-out.md, "The hot path
// on the workers"):
//
//	sluice.queue_send(p_queue_id bigint, p_account text, p_queue text, <account_send's arguments>) -> bigint
//	sluice.queue_send_batch(p_queue_id, p_account, p_queue, <account_send_batch's>) -> SETOF bigint
//	sluice.queue_receive(p_queue_id, p_account, p_queue, <account_receive's>) -> SETOF received_message
//	sluice.queue_receive_delete(p_queue_id, p_account, p_queue, <account_receive_delete's>)
//	sluice.queue_delete(p_queue_id, p_account, p_queue, <account_delete's>, p_async_commit boolean DEFAULT false) -> boolean
//	sluice.queue_ack(p_queue_id, p_account, p_queue, <account_ack's>, p_async_commit boolean DEFAULT false) -> SETOF bigint
//	sluice.queue_nack, queue_fail, queue_release (SETOF bigint) and
//	sluice.queue_set_visibility (boolean): likewise, without p_async_commit
//
// The id is sluice.queue_id(account, queue). Each checks that the id is
// that account's queue of that name and raises the account_* functions'
// not-found error (SQ001; SQ003 for a name that is not valid) when it is not (a queue deleted and created again
// has a new id). p_async_commit commits without waiting for the disk
// (synchronous_commit off inside the call). The account_* functions keep
// their signatures and call these; the Client calls them by id on its pool
// (resolving and caching ids, ids.go) and by name in a caller's
// transaction and in a Batch.
//
// 024 adds bytes and dlq_bytes to queue_stats (the queue's messages' and
// dead letters' bodies and headers as stored) and records both in
// queue_minutes with each depth sample; StoredBytes sums an account's,
// and Options.StoredBytesLimit refuses sends and publishes of an account
// at its limit with ErrStoredBytesLimit.
//
// # Errors
//
// Refused requests return an *Error whose Kind is one of ErrQueueNotFound,
// ErrQueueExists, ErrInvalidName, ErrMessageTooLarge, ErrInvalidArgument,
// ErrStaleReceipt, ErrMessageNotFound, ErrTopicNotFound, ErrTopicExists,
// ErrAccountNotFound, ErrAccountExists, ErrQueueInUse or (raised by the
// Client alone) ErrStoredBytesLimit; test with errors.Is. The SQL
// functions raise the same errors with SQLSTATE codes SQ001-SQ012 and the
// same messages (but for SQ007, ErrMessageNotFound: the SQL delete,
// delete_dlq and set_visibility return false for a message that is not
// there, and the Go API turns that into the error), which say what was wrong and what is allowed. AsError is
// the one mapping from those codes to kinds: it also converts the errors
// of statements that call the SQL API outside the Client.
//
// # Design choices
//
// Schema and search_path. Migration files are written unqualified and run
// with search_path set to the target schema, so one set of files serves the
// default "sluice" schema and every per-test schema, and the files read
// like plain SQL. Each PL/pgSQL function pins that path with SET
// search_path FROM CURRENT, so it works whatever the caller's search_path.
// Measured cost: about 4 µs per call, against about 60 µs for a batch
// send, and no difference that 8-client pgbench rounds of send_batch
// with and without it could show (migration 018); schema-templated SQL
// was not worth its complexity. The SQL-language wrappers on the default
// account (delete_queue, receive_dlq, send_entries and the like) use
// BEGIN ATOMIC bodies, which bind names at creation and need no pinned
// path; the hot ones (send, send_batch, receive, delete) are PL/pgSQL.
//
// Sequences. One global bigint sequence (CACHE 1) numbers every message:
// increasing within each queue, with gaps, and no per-queue counter row
// that every sender would have to lock.
//
// Tables and indexes. messages has no foreign key to queues (a key-share
// row lock per insert costs throughput); its primary key (queue_id,
// sequence) serves acks and its index (queue_id, visible_at, sequence)
// serves receive. Two partial indexes hold only the rows the sweeper looks
// for: last leases (final_lease) and messages with an expiration. Claims
// are written as "= ANY(ARRAY(SELECT ... FOR UPDATE SKIP LOCKED))" rather
// than a CTE join: PL/pgSQL caches generic plans, and the generic plan of
// a join can hash the whole queue (150 ms per receive at 300,000 messages)
// where the array form always probes the primary key (0.4 ms).
//
// Bloat. Every receive rewrites its rows (visible_at is indexed, so
// updates cannot be HOT) and every ack deletes them, so dead index entries
// pile up at the head of the receive index, which every receive walks.
// messages carries aggressive per-table autovacuum settings; the Sweeper
// also runs VACUUM on it when dead rows pass a threshold, which covers
// servers where autovacuum is off or behind. That is what keeps receive
// cost flat as the backlog grows (see BENCHMARKS.md).
//
// Statistics. An ack of many messages looks each up by its key only while
// the planner knows how large their queue is; taking a large queue for a
// small one, it hashes the whole queue instead. A table filled faster than
// autovacuum analyzes it (or never analyzed, autovacuum off) is planned
// so; the Sweeper runs ANALYZE on it then (SweeperOptions.AnalyzeThreshold).
//
// Long polling. One Listener per process holds the only LISTEN connection
// and fans wake-ups out to subscribers per queue (Client long polls and,
// through Subscribe, anything else such as a dispatcher). NOTIFY takes a
// database-wide lock at commit that serializes notifying transactions, so
// senders notify only for queues a listener registered interest in (the
// unlogged wake_interest table, renewed while subscribed): a busy queue no
// one waits on never pays for NOTIFY. A wake-up is a hint; the long poll
// also polls, so a missed hint (or a delayed message coming due) costs at
// most one poll interval.
//
// Coalescing. Concurrent Send, SendBatch, Receive and Ack calls on one
// queue through one Client are merged (pgqueue/internal/coalesce): with two
// statements for the queue in flight, later calls wait for one to finish
// and then go together in the next statement and commit. Every call gets
// exactly its own sequences, messages or acks, and its own error (a
// combined statement that fails is retried call by call). Merging halves
// the database CPU per message and, in the calmer benchmark runs, raised
// throughput by 15-50% (BENCHMARKS.md); on a host where the benchmark
// fought heavy unrelated load, one statement per call sometimes did better
// because more backends got more CPU slices. Options.NoCoalescing turns it
// off.
//
// Acks. Ack and Delete commit with synchronous_commit = off in their own
// transaction unless Options.SynchronousAcks is set: losing an ack to a
// database crash only causes a redelivery, which at-least-once delivery
// allows, and it halves the commit cost of receive+delete. Sends, receives,
// nacks and DLQ moves always commit synchronously.
//
// Batches. Client.NewBatch gathers acks, nacks, DLQ moves, sends,
// publishes and statements of the caller's own into one pgx.Batch: one
// round trip, one transaction, all or nothing. Its settling statements are
// exact (a lease no longer current fails the whole batch with
// ErrStaleReceipt), so a caller can record what it did in the same batch.
// The trigger engine settles an invocation that emitted messages this way,
// with its sends and the invocation record. Client.SettleByID instead runs
// one statement of the caller's keyed by the queue's id (a SQL function
// settling through queue_ack, queue_nack and queue_fail, exact, plus the
// caller's own writes): on Citus it is delegated to the queue's worker and
// commits there alone; the engine settles invocations without emits so
// (triggers' settle_invocations). AckTx, NackTx, FailTx, SendTx,
// SendBatchTx and PublishTx run in a caller's transaction.
//
// Per-minute statistics. Client.MinuteStats reads, per queue and minute,
// the messages sent, acknowledged and moved to the DLQ and a sample of the
// depth (queue_minutes, migration 003, kept 24 hours). A counter row per
// queue updated by every send would serialize senders (and a long
// transaction holding it would block the others), so sends and acks are
// counted in the Client's memory while a Sweeper runs on it, and the
// Sweeper adds them with one upsert a minute and on Stop: only what goes
// through a Client is counted, not sends and deletes that users make with
// the SQL functions from their own sessions, nor topic publishes. Those do
// show in the depth, which the first Sweeper to get there in a minute
// samples from queue_stats for every queue. DLQ moves are rare, so sweep()
// and account_fail count them in the statement that moves them.
//
// Sweeping. sweep() takes a transaction-scoped advisory lock per schema
// (others return 0 at once), so any number of processes may run a Sweeper.
// Each step handles at most 10,000 rows of a queue (retention: 1,000), queue
// by queue; the Sweeper calls again at once while a sweep is that busy. Retention relies on sequences growing with
// time: only queues whose oldest message is past retention are visited.
package pgqueue
