-- Statements of the HTTP API. {{schema}} is the quoted schema name.

-- Keys are created by package server/keys.

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

-- name: get_account_limits
-- A NULL (the server's value) reads as 0, which withDefaults fills.
SELECT coalesce(queues, 0), coalesce(functions, 0), coalesce(triggers, 0), coalesce(hooks, 0), coalesce(keys, 0),
       coalesce(module_bytes, 0), coalesce(topics, 0), coalesce(kv_entries, 0), coalesce(kv_bytes, 0),
       coalesce(guest_memory_mb, 0), coalesce(message_bytes, 0)
  FROM {{schema}}.account_limits
 WHERE account = $1

-- name: set_account_limits
INSERT INTO {{schema}}.account_limits (account, queues, functions, triggers, hooks, keys, module_bytes, topics,
                                      kv_entries, kv_bytes, guest_memory_mb, message_bytes)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (account) DO UPDATE SET queues = $2, functions = $3, triggers = $4, hooks = $5, keys = $6,
    module_bytes = $7, topics = $8, kv_entries = $9, kv_bytes = $10, guest_memory_mb = $11, message_bytes = $12,
    updated_at = now()

-- name: delete_old_revoked_keys
-- Revoked keys are kept (listed, and refused by name at authentication)
-- for $2 after their revocation, then deleted when the account creates a
-- key.
DELETE FROM {{schema}}.access_keys WHERE account = $1 AND revoked_at < now() - make_interval(days => $2)

-- name: lock_account_changes
-- The account's change lock (server/accountlock.go), until the transaction ends.
SELECT pg_advisory_xact_lock(hashtextextended($1, 0))

-- name: record_auth_failure
-- Takes one token from subject's bucket ($2 tokens at most, refilled at
-- $3 a minute) and returns what is left: below 1, the subject is over
-- its budget.
INSERT INTO {{schema}}.auth_failures AS f (subject, tokens, at)
VALUES ($1, $2::float8 - 1, clock_timestamp())
ON CONFLICT (subject) DO UPDATE
   SET tokens = least($2::float8,
                      f.tokens + extract(epoch FROM clock_timestamp() - f.at)::float8 / 60 * $3::float8) - 1,
       at = clock_timestamp()
RETURNING tokens

-- name: prune_auth_failures
-- Buckets untouched for $1 seconds are full again: forgetting them
-- changes nothing.
DELETE FROM {{schema}}.auth_failures WHERE at < clock_timestamp() - make_interval(secs => $1)

-- name: take_account_slot
-- Takes for holder $4, for $5 seconds, the lowest slot of account $1's
-- kind $2 below $3 that is free: no row, or a lease run out. No row
-- returned: all $3 are held, or another taker got the chosen slot first
-- (the caller tries again).
INSERT INTO {{schema}}.account_slots AS h (account, kind, slot, holder, expires_at)
SELECT $1, $2, s, $4, clock_timestamp() + make_interval(secs => $5)
  FROM generate_series(0, $3::int - 1) s
 WHERE NOT EXISTS (SELECT 1 FROM {{schema}}.account_slots o
                    WHERE o.account = $1 AND o.kind = $2 AND o.slot = s AND o.expires_at > clock_timestamp())
 ORDER BY s
 LIMIT 1
ON CONFLICT (account, kind, slot) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
 WHERE h.expires_at <= clock_timestamp()
RETURNING slot

-- name: renew_account_slot
-- No row: the lease ran out and another holder has the slot.
UPDATE {{schema}}.account_slots SET expires_at = clock_timestamp() + make_interval(secs => $5)
 WHERE account = $1 AND kind = $2 AND slot = $3 AND holder = $4

-- name: give_account_slot
DELETE FROM {{schema}}.account_slots WHERE account = $1 AND kind = $2 AND slot = $3 AND holder = $4
