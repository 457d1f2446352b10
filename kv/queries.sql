-- Statements of the key-value stores. {{schema}} is the quoted schema name.
-- $1 account, $2 store, $3 key throughout; ttl_ms 0 means no expiry. The
-- writes that can grow an account's stores take its quota last, entries
-- then bytes (0 and 0: none); a write past it changes nothing and returns
-- no row. The test of the quota is only the call of kv_within_quota, whose
-- arguments the planner cannot fold: a condition on the quota's
-- parameters here (no quota: no call) made every custom plan look cheaper
-- than the generic one, so the statement was planned on every call
-- (BENCHMARKS.md, "Key-value quota").

-- name: get
SELECT value FROM {{schema}}.kv_entries
 WHERE account = $1 AND store = $2 AND key = $3
   AND (expires_at IS NULL OR expires_at > now())

-- name: set
INSERT INTO {{schema}}.kv_entries (account, store, key, value, expires_at)
SELECT $1::text, $2::text, $3::bytea, $4::bytea, CASE WHEN $5::bigint > 0 THEN now() + $5::bigint * interval '1 millisecond' END
 WHERE {{schema}}.kv_within_quota($1, $2, $3, octet_length($3::bytea) + octet_length($4::bytea), $6, $7)
ON CONFLICT (account, store, key) DO UPDATE
   SET value = excluded.value, expires_at = excluded.expires_at, updated_at = now()
RETURNING true

-- name: delete
DELETE FROM {{schema}}.kv_entries
 WHERE account = $1 AND store = $2 AND key = $3
RETURNING expires_at IS NULL OR expires_at > now()

-- name: increment
-- The new value is counted as 20 bytes, the longest a 64-bit integer takes.
INSERT INTO {{schema}}.kv_entries AS e (account, store, key, value)
SELECT $1::text, $2::text, $3::bytea, convert_to($4::bigint::text, 'UTF8')
 WHERE {{schema}}.kv_within_quota($1, $2, $3, octet_length($3::bytea) + 20, $5, $6)
ON CONFLICT (account, store, key) DO UPDATE
   SET value = convert_to((CASE WHEN e.expires_at <= now() THEN 0
                                ELSE convert_from(e.value, 'UTF8')::bigint END + $4::bigint)::text, 'UTF8'),
       expires_at = CASE WHEN e.expires_at <= now() THEN NULL ELSE e.expires_at END,
       updated_at = now()
RETURNING convert_from(value, 'UTF8')::bigint

-- name: insert_if_absent
INSERT INTO {{schema}}.kv_entries AS e (account, store, key, value, expires_at)
SELECT $1::text, $2::text, $3::bytea, $4::bytea, CASE WHEN $5::bigint > 0 THEN now() + $5::bigint * interval '1 millisecond' END
 WHERE {{schema}}.kv_within_quota($1, $2, $3, octet_length($3::bytea) + octet_length($4::bytea), $6, $7)
ON CONFLICT (account, store, key) DO UPDATE
   SET value = excluded.value, expires_at = excluded.expires_at, created_at = now(), updated_at = now()
 WHERE e.expires_at <= now()
RETURNING true

-- name: compare_and_set
UPDATE {{schema}}.kv_entries
   SET value = $5, updated_at = now(),
       expires_at = CASE WHEN $6::bigint > 0 THEN now() + $6::bigint * interval '1 millisecond' END
 WHERE account = $1 AND store = $2 AND key = $3 AND value = $4
   AND (expires_at IS NULL OR expires_at > now())
   AND {{schema}}.kv_within_quota($1, $2, $3, octet_length($3::bytea) + octet_length($5::bytea), $7, $8)
RETURNING true

-- name: within_quota
-- $4 the size of the entry to write, $5 and $6 the quota.
SELECT {{schema}}.kv_within_quota($1, $2, $3, $4, $5, $6)

-- name: usage
SELECT coalesce(sum(entries), 0), coalesce(sum(bytes), 0) FROM {{schema}}.kv_usage WHERE account = $1

-- name: list
SELECT key, value, expires_at, updated_at FROM {{schema}}.kv_entries
 WHERE account = $1 AND store = $2
   AND substr(key, 1, octet_length($3::bytea)) = $3::bytea
   AND key > $4::bytea
   AND (expires_at IS NULL OR expires_at > now())
 ORDER BY key
 LIMIT $5

-- name: sweep
DELETE FROM {{schema}}.kv_entries
 WHERE (account, store, key) IN (
       SELECT account, store, key FROM {{schema}}.kv_entries
        WHERE expires_at <= now()
        LIMIT $1
          FOR UPDATE SKIP LOCKED)
