-- Statements of the HTTP API. {{schema}} is the quoted schema name.

-- name: ensure_account
INSERT INTO {{schema}}.accounts (number) VALUES ($1) ON CONFLICT DO NOTHING

-- name: create_key
INSERT INTO {{schema}}.access_keys (id, account, secret_hash, scopes, queues, description)
VALUES ($1, $2, $3, $4, $5, $6)

-- name: get_key
SELECT account, secret_hash, scopes, queues, description, created_at, revoked_at
  FROM {{schema}}.access_keys
 WHERE id = $1

-- name: list_keys
SELECT id, account, scopes, queues, description, created_at, revoked_at
  FROM {{schema}}.access_keys
 WHERE account = $1
 ORDER BY created_at, id

-- name: revoke_key
-- Revoking twice keeps the first revocation time; no row means no such key.
UPDATE {{schema}}.access_keys SET revoked_at = coalesce(revoked_at, now())
 WHERE account = $1 AND id = $2
RETURNING id

-- name: put_hook
-- Create or replace a hook; created tells which.
INSERT INTO {{schema}}.hooks AS h (account, name, queue, verify, secrets, source)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (account, name) DO UPDATE
   SET queue = excluded.queue, verify = excluded.verify, secrets = excluded.secrets,
       source = excluded.source, updated_at = now()
RETURNING (xmax = 0) AS created, created_at, updated_at

-- name: get_hook
-- The hook with the database's clock, which webhook timestamps are checked against.
SELECT queue, verify, secrets, now() FROM {{schema}}.hooks WHERE account = $1 AND name = $2

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

-- name: list_invocations
-- Newest first by id (ids grow as records are written, so before_id pages
-- exactly); $8 picks one invocation by id. The trigger's name is '' when
-- the trigger is gone.
SELECT i.id, i.function, i.version, i.trigger_id, coalesce(t.name, ''), i.trigger_type, i.source, i.batch_size,
       i.started_at, i.duration_ms, i.outcome, coalesce(i.failure_kind, ''), coalesce(i.error, ''), i.acked,
       i.retried, i.dead, i.message_ids, coalesce(i.stderr, '')
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
-- The metrics collector reads the invocation log forward by id. settled
-- marks rows that finished long enough ago that every row with a smaller
-- id is committed too (the engine writes a record within seconds).
SELECT id, account, function, outcome, duration_ms,
       started_at + duration_ms * interval '1 millisecond' < now() - make_interval(secs => $3) AS settled
  FROM {{schema}}.invocations
 WHERE id > $1
 ORDER BY id
 LIMIT $2
