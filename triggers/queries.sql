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
       coalesce(v.timeout_ms, 0), coalesce(v.env, '{}'),
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
