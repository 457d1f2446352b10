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

-- name: list_triggers
SELECT id, account, name, kind, coalesce(function, ''), alias, coalesce(queue, ''), dlq, batch_size,
       batch_window_ms, concurrency, ack_policy, backoff_initial_ms, backoff_max_ms, lease_extension,
       coalesce(cron_spec, ''), timezone, enqueue_body, enabled, source, updated_at
  FROM {{schema}}.triggers
 WHERE account = $1
 ORDER BY name

-- name: active_triggers
-- Every enabled trigger with what it runs now: the version its alias points
-- at and the queue's lease settings. The engine reloads this every second.
SELECT t.id, t.account, t.name, t.kind, coalesce(t.function, ''), t.alias, coalesce(t.queue, ''), t.dlq,
       t.batch_size, t.batch_window_ms, t.concurrency, t.ack_policy, t.backoff_initial_ms,
       t.backoff_max_ms, t.lease_extension, coalesce(t.cron_spec, ''), t.timezone, t.enqueue_body,
       t.enabled, t.source, t.updated_at,
       coalesce(v.version, 0), coalesce(encode(v.wasm_sha256, 'hex'), ''), coalesce(v.memory_mib, 0),
       coalesce(v.timeout_ms, 0), coalesce(v.env, '{}'), coalesce(v.capabilities, '{}'),
       coalesce(q.visibility_timeout_seconds, 0), coalesce(q.max_receive_count, 0)
  FROM {{schema}}.triggers t
  LEFT JOIN {{schema}}.functions f ON f.account = t.account AND f.name = t.function
  LEFT JOIN {{schema}}.function_aliases a ON a.function_id = f.id AND a.alias = t.alias
  LEFT JOIN {{schema}}.function_versions v ON v.function_id = f.id AND v.version = a.version
  LEFT JOIN {{schema}}.queues q ON q.account = t.account AND q.name = t.queue
 WHERE t.enabled
 ORDER BY t.id

-- name: claim_tick
INSERT INTO {{schema}}.cron_ticks (trigger_id, scheduled_time, claimed_by) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING

-- name: prune_ticks
DELETE FROM {{schema}}.cron_ticks WHERE claimed_at < now() - interval '1 day'

-- name: prune_invocations
DELETE FROM {{schema}}.invocations WHERE started_at < now() - make_interval(secs => $1)

-- name: list_invocations
-- Newest first by id (ids grow as records are written, so before_id pages
-- exactly); $8 picks one invocation by id. The trigger's name is '' when
-- the trigger is gone.
SELECT i.id, i.account, i.function, i.version, i.trigger_id, coalesce(t.name, ''), i.trigger_type, i.source,
       i.batch_size, i.started_at, i.duration_ms, i.outcome, coalesce(i.failure_kind, ''), coalesce(i.error, ''),
       i.acked, i.retried, i.dead, i.message_ids, coalesce(i.stderr, '')
  FROM {{schema}}.invocations i
  LEFT JOIN {{schema}}.triggers t ON t.id = i.trigger_id
 WHERE i.account = $1
   AND ($2::text IS NULL OR i.function = $2)
   AND ($3::text IS NULL OR i.outcome = $3)
   AND ($4::timestamptz IS NULL OR i.started_at >= $4)
   AND ($5::timestamptz IS NULL OR i.started_at < $5)
   AND ($6::text IS NULL OR t.name = $6)
   AND ($7::bigint IS NULL OR i.id < $7)
   AND ($8::bigint IS NULL OR i.id = $8)
 ORDER BY i.id DESC
 LIMIT $9

-- name: invocations_after
-- The invocation log read forward by id. settled marks rows that finished
-- long enough ago that every row with a smaller id is committed too (the
-- engine writes a record within seconds).
SELECT id, account, function, outcome, duration_ms,
       started_at + duration_ms * interval '1 millisecond' < now() - make_interval(secs => $3) AS settled
  FROM {{schema}}.invocations
 WHERE id > $1
 ORDER BY id
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
