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
