-- Statements of the triggers package. {{schema}} is the quoted schema name.

-- name: put_trigger
-- Insert or update a trigger by (account, name); returns a row only when
-- something changed, so applying the same definition twice is a no-op.
INSERT INTO {{schema}}.triggers AS t (account, name, kind, function, alias, queue, dlq, batch_size,
       batch_window_ms, concurrency, ack_policy, backoff_initial_ms, backoff_max_ms, lease_extension,
       cron_spec, timezone, enqueue_body, enabled, source)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
ON CONFLICT (account, name) DO UPDATE
   SET kind = excluded.kind, function = excluded.function, alias = excluded.alias,
       queue = excluded.queue, dlq = excluded.dlq, batch_size = excluded.batch_size,
       batch_window_ms = excluded.batch_window_ms, concurrency = excluded.concurrency,
       ack_policy = excluded.ack_policy, backoff_initial_ms = excluded.backoff_initial_ms,
       backoff_max_ms = excluded.backoff_max_ms, lease_extension = excluded.lease_extension,
       cron_spec = excluded.cron_spec, timezone = excluded.timezone,
       enqueue_body = excluded.enqueue_body, enabled = excluded.enabled, source = excluded.source,
       updated_at = now()
 WHERE (t.kind, t.function, t.alias, t.queue, t.dlq, t.batch_size, t.batch_window_ms, t.concurrency,
        t.ack_policy, t.backoff_initial_ms, t.backoff_max_ms, t.lease_extension, t.cron_spec,
        t.timezone, t.enqueue_body, t.enabled, t.source)
       IS DISTINCT FROM
       (excluded.kind, excluded.function, excluded.alias, excluded.queue, excluded.dlq,
        excluded.batch_size, excluded.batch_window_ms, excluded.concurrency, excluded.ack_policy,
        excluded.backoff_initial_ms, excluded.backoff_max_ms, excluded.lease_extension,
        excluded.cron_spec, excluded.timezone, excluded.enqueue_body, excluded.enabled, excluded.source)
RETURNING id

-- name: delete_trigger
DELETE FROM {{schema}}.triggers WHERE account = $1 AND name = $2

-- name: set_trigger_enabled
-- Enable or disable a trigger; returns whether it existed and whether
-- anything changed. Running engines pick it up at their next reload.
WITH old AS (SELECT id, enabled FROM {{schema}}.triggers WHERE account = $1 AND name = $2),
     upd AS (UPDATE {{schema}}.triggers t SET enabled = $3, updated_at = now()
               FROM old WHERE t.id = old.id AND old.enabled <> $3 RETURNING t.id)
SELECT EXISTS (SELECT 1 FROM old), EXISTS (SELECT 1 FROM upd)

-- name: list_triggers
SELECT id, account, name, kind, coalesce(function, ''), alias, coalesce(queue, ''), dlq, batch_size,
       batch_window_ms, concurrency, ack_policy, backoff_initial_ms, backoff_max_ms, lease_extension,
       coalesce(cron_spec, ''), timezone, enqueue_body, enabled, source, updated_at
  FROM {{schema}}.triggers
 WHERE account = $1
 ORDER BY name

-- name: active_triggers
-- Every enabled trigger. The engine reloads this every second and resolves
-- what each runs (the version its alias points at, the queue's lease
-- settings) through the functions and pgqueue Go APIs, one statement each.
SELECT id, account, name, kind, coalesce(function, ''), alias, coalesce(queue, ''), dlq,
       batch_size, batch_window_ms, concurrency, ack_policy, backoff_initial_ms,
       backoff_max_ms, lease_extension, coalesce(cron_spec, ''), timezone, enqueue_body,
       enabled, source, updated_at
  FROM {{schema}}.triggers
 WHERE enabled
 ORDER BY id

-- name: claim_tick
INSERT INTO {{schema}}.cron_ticks (trigger_id, scheduled_time, claimed_by) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING

-- name: prune_ticks
DELETE FROM {{schema}}.cron_ticks WHERE claimed_at < now() - interval '1 day'

-- name: prune_invocations
DELETE FROM {{schema}}.invocations WHERE started_at < now() - make_interval(secs => $1)

-- name: next_invocation_ids
-- $1 ids of invocations about to run, in one round trip: the engine hands
-- them out in increasing order (invocationIDs), each taken before its
-- invocation runs so that its log lines carry the id the record gets.
SELECT nextval(s.seq)
  FROM (SELECT pg_get_serial_sequence('{{schema}}.invocations', 'id')::regclass AS seq) s,
       generate_series(1, $1)

-- name: insert_invocation
-- One invocation record, written in the batch (one transaction) that
-- settles the invocation's messages and sends what it emitted. Its id was
-- taken by next_invocation_ids. $25 lists the emits sent ({"queue"|"topic",
-- "for"}, in output order); the sends and publishes before this statement
-- noted what they sent in the transaction-local setting named $26
-- (pgqueue.SentSetting): the k-th emit to a queue gets the k-th sequence of
-- that queue's send, the k-th topic emit the copies of the k-th publish.
-- INSERT ... SELECT, not VALUES: Citus takes no subquery in the VALUES of
-- an INSERT into a distributed table (the log on Citus); it evaluates the
-- SELECT where the statement runs (here) and routes the row to its shard.
INSERT INTO {{schema}}.invocations (id, account, function, version, trigger_id, trigger_type, source,
    batch_size, started_at, duration_ms, outcome, failure_kind, error, acked, retried, dead, emitted,
    message_ids, stderr, http_requests, http_errors, http_bytes_sent, http_bytes_received, trigger, emitted_messages)
OVERRIDING SYSTEM VALUE
SELECT $1::bigint, $2::text, $3::text, $4::int, $5::bigint, $6::text, $7::text, $8::int, $9::timestamptz,
       $10::float8, $11::text, $12::text, $13::text, $14::int, $15::int, $16::int, $17::int, $18::bigint[],
       $19::text, $20::int, $21::int, $22::bigint, $23::bigint, $24::text, (
    SELECT jsonb_agg(CASE WHEN x.e ? 'topic'
               THEN x.e || jsonb_build_object('copies', st.topics -> (x.k - 1)::int -> 'copies')
               ELSE x.e || jsonb_build_object('sequence', (SELECT n -> 'sequences' -> (x.k - 1)::int
                                                             FROM jsonb_array_elements(s0.notes) n
                                                            WHERE n ->> 'queue' = x.e ->> 'queue' LIMIT 1))
           END ORDER BY x.i)
      FROM (SELECT t.e, t.i, row_number() OVER (PARTITION BY t.e ? 'topic', t.e ->> 'queue' ORDER BY t.i) AS k
              FROM jsonb_array_elements($25::jsonb) WITH ORDINALITY AS t(e, i)) x,
           (SELECT coalesce(nullif(current_setting($26, true), ''), '[]')::jsonb AS notes) s0,
           LATERAL (SELECT coalesce(jsonb_agg(u.n ORDER BY u.j), '[]'::jsonb) AS topics
                      FROM jsonb_array_elements(s0.notes) WITH ORDINALITY AS u(n, j) WHERE u.n ? 'topic') st)

-- name: settle_invocations
-- A settlement of a queue trigger's batches without emits and their
-- records, in one call by the queue's id (migration 007;
-- pgqueue.Client.SettleByID gives $1-$14). $15-$20 are what the records
-- share; $21-$36 hold one element per record (message_ids as array
-- literals such as '{1,2}': a bigint[][] would have to be rectangular).
SELECT {{schema}}.settle_invocations($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
       $18, $19, $20, $21::bigint[], $22::int[], $23::timestamptz[], $24::float8[], $25::text[], $26::text[],
       $27::text[], $28::int[], $29::int[], $30::int[], $31::text[], $32::text[], $33::int[], $34::int[],
       $35::bigint[], $36::bigint[])

-- name: list_invocations
-- Newest first by id (ids are taken as invocations start, so before_id
-- pages exactly); $8 picks one invocation by id. trigger is the name the
-- invocation was recorded under (see migration 005).
SELECT i.id, i.account, i.function, i.version, i.trigger_id, i.trigger, i.trigger_type, i.source,
       i.batch_size, i.started_at, i.duration_ms, i.outcome, coalesce(i.failure_kind, ''), coalesce(i.error, ''),
       i.acked, i.retried, i.dead, i.emitted, i.message_ids, coalesce(i.stderr, ''),
       i.http_requests, i.http_errors, i.http_bytes_sent, i.http_bytes_received, i.log_seq,
       i.started_at + i.duration_ms * interval '1 millisecond' < now() - make_interval(secs => $10) AS settled
  FROM {{schema}}.invocations i
 WHERE i.account = $1
   AND ($2::text IS NULL OR i.function = $2)
   AND ($3::text IS NULL OR i.outcome = $3)
   AND ($4::timestamptz IS NULL OR i.started_at >= $4)
   AND ($5::timestamptz IS NULL OR i.started_at < $5)
   AND ($6::text IS NULL OR i.trigger = $6)
   AND ($7::bigint IS NULL OR i.id < $7)
   AND ($8::bigint IS NULL OR i.id = $8)
 ORDER BY i.id DESC
 LIMIT $9

-- name: follow_invocations
-- The account's invocation log read forward in the order records were
-- written (log_seq), for `sluice logs`: the same columns as
-- list_invocations. settled marks rows that ended long enough ago ($10
-- seconds) that every row with a smaller log_seq is committed too.
SELECT i.id, i.account, i.function, i.version, i.trigger_id, i.trigger, i.trigger_type, i.source,
       i.batch_size, i.started_at, i.duration_ms, i.outcome, coalesce(i.failure_kind, ''), coalesce(i.error, ''),
       i.acked, i.retried, i.dead, i.emitted, i.message_ids, coalesce(i.stderr, ''),
       i.http_requests, i.http_errors, i.http_bytes_sent, i.http_bytes_received, i.log_seq,
       i.started_at + i.duration_ms * interval '1 millisecond' < now() - make_interval(secs => $10) AS settled
  FROM {{schema}}.invocations i
 WHERE i.account = $1
   AND ($2::text IS NULL OR i.function = $2)
   AND ($3::text IS NULL OR i.outcome = $3)
   AND ($4::timestamptz IS NULL OR i.started_at >= $4)
   AND ($5::timestamptz IS NULL OR i.started_at < $5)
   AND ($6::text IS NULL OR i.trigger = $6)
   AND i.log_seq > $7
   AND ($8::bigint IS NULL OR i.id = $8)
 ORDER BY i.log_seq
 LIMIT $9

-- name: log_seq_since
-- Where a follower that wants the account's invocations started at or
-- after $2 starts: before the first record of them written.
-- (Two subqueries, not one in the other's target list: Citus plans each
-- on its own over the distributed log, and refuses the nested form.)
SELECT coalesce((SELECT min(log_seq) - 1 FROM {{schema}}.invocations WHERE account = $1 AND started_at >= $2),
                (SELECT coalesce(max(log_seq), 0) FROM {{schema}}.invocations))

-- name: last_log_seq
-- Where a follower that wants only new records starts.
SELECT coalesce(max(log_seq), 0) FROM {{schema}}.invocations

-- name: invocations_after
-- The invocation log read forward by log_seq (the order records are
-- written; see migration 005). settled marks rows that finished
-- long enough ago that every row with a smaller id is committed too (the
-- engine writes a record within seconds).
SELECT log_seq, id, account, function, outcome, duration_ms, http_requests, http_errors,
       http_bytes_sent + http_bytes_received,
       started_at + duration_ms * interval '1 millisecond' < now() - make_interval(secs => $3) AS settled
  FROM {{schema}}.invocations
 WHERE log_seq > $1
 ORDER BY log_seq
 LIMIT $2

-- name: put_hook
-- Create or replace a hook; created tells which.
INSERT INTO {{schema}}.hooks AS h (account, name, queue, verify, secrets, source)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (account, name) DO UPDATE
   SET queue = excluded.queue, verify = excluded.verify, secrets = excluded.secrets,
       source = excluded.source, updated_at = now()
RETURNING (xmax = 0) AS created

-- name: get_hook
-- The hook with the database's clock, which webhook timestamps are checked against.
SELECT queue, verify, secrets, source, created_at, updated_at, now()
  FROM {{schema}}.hooks
 WHERE account = $1 AND name = $2

-- name: list_hooks
SELECT name, queue, verify, cardinality(secrets), source, created_at, updated_at
  FROM {{schema}}.hooks
 WHERE account = $1
 ORDER BY name

-- name: delete_hook
DELETE FROM {{schema}}.hooks WHERE account = $1 AND name = $2

-- name: claim_delivery
-- Inserted in the enqueueing transaction: a concurrent duplicate waits on
-- the primary key until the first commits, then inserts nothing.
INSERT INTO {{schema}}.webhook_deliveries (account, hook, delivery_id) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING
RETURNING true

-- name: first_delivery
SELECT coalesce(sequence, 0) FROM {{schema}}.webhook_deliveries
 WHERE account = $1 AND hook = $2 AND delivery_id = $3

-- name: set_delivery_sequence
UPDATE {{schema}}.webhook_deliveries SET sequence = $4
 WHERE account = $1 AND hook = $2 AND delivery_id = $3

-- name: prune_deliveries
-- Delete a bounded batch of delivery ids older than $1 seconds.
DELETE FROM {{schema}}.webhook_deliveries
 WHERE ctid = ANY (ARRAY(SELECT ctid FROM {{schema}}.webhook_deliveries
                          WHERE received_at < now() - make_interval(secs => $1)
                          LIMIT 1000))

-- name: invocation_emitted_messages
SELECT coalesce(emitted_messages, '[]'::jsonb) FROM {{schema}}.invocations WHERE account = $1 AND id = $2

-- name: set_trigger_app
UPDATE {{schema}}.triggers SET app = $3 WHERE account = $1 AND name = $2

-- name: trigger_apps
SELECT name, app FROM {{schema}}.triggers WHERE account = $1 ORDER BY name

-- name: set_hook_app
UPDATE {{schema}}.hooks SET app = $3 WHERE account = $1 AND name = $2

-- name: hook_apps
SELECT name, app FROM {{schema}}.hooks WHERE account = $1 ORDER BY name
