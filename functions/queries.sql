-- Statements of the function registry. {{schema}} is the quoted schema name.

-- name: upsert_function
INSERT INTO {{schema}}.functions (account, name) VALUES ($1, $2)
ON CONFLICT (account, name) DO UPDATE SET name = excluded.name
RETURNING id

-- name: store_module
-- Stores the module, or locks the stored one (ON CONFLICT DO UPDATE locks
-- the row even where its WHERE is false) until the deploy commits, so that
-- delete_unused_modules cannot remove it before the new version refers
-- to it.
INSERT INTO {{schema}}.wasm_modules (sha256, module, size_bytes) VALUES ($1, $2, $3)
ON CONFLICT (sha256) DO UPDATE SET size_bytes = excluded.size_bytes WHERE false

-- name: latest_version
SELECT version, wasm_sha256, memory_mib, timeout_ms, env, capabilities
  FROM {{schema}}.function_versions
 WHERE function_id = $1
 ORDER BY version DESC
 LIMIT 1

-- name: insert_version
INSERT INTO {{schema}}.function_versions (function_id, version, wasm_sha256, memory_mib, timeout_ms, env, capabilities)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING created_at

-- name: set_alias
INSERT INTO {{schema}}.function_aliases AS a (function_id, alias, version)
VALUES ($1, $2, $3)
ON CONFLICT (function_id, alias) DO UPDATE
   SET previous_version = a.version, version = excluded.version, updated_at = now()
 WHERE a.version <> excluded.version
RETURNING previous_version

-- name: alias_count
-- The function's aliases, and whether $2 is one of them.
SELECT count(*)::integer, coalesce(bool_or(alias = $2), false)
  FROM {{schema}}.function_aliases WHERE function_id = $1

-- name: prune_versions
-- Deletes the function's versions older than its newest $2 that no alias
-- points at or would roll back to, and returns the modules they used.
WITH gone AS (
    DELETE FROM {{schema}}.function_versions v
     WHERE v.function_id = $1
       AND v.version <= (SELECT max(version) FROM {{schema}}.function_versions WHERE function_id = $1) - $2
       AND NOT EXISTS (SELECT 1 FROM {{schema}}.function_aliases a
                        WHERE a.function_id = $1 AND v.version IN (a.version, a.previous_version))
    RETURNING v.wasm_sha256)
SELECT array(SELECT DISTINCT wasm_sha256 FROM gone)

-- name: lock_function
SELECT id FROM {{schema}}.functions WHERE account = $1 AND name = $2 FOR UPDATE

-- name: alias_target
SELECT version, previous_version FROM {{schema}}.function_aliases
 WHERE function_id = $1 AND alias = $2

-- name: version_exists
SELECT EXISTS (SELECT 1 FROM {{schema}}.function_versions WHERE function_id = $1 AND version = $2)

-- name: resolve
SELECT f.name, v.version, v.wasm_sha256, m.size_bytes, v.memory_mib, v.timeout_ms, v.env, v.capabilities, v.created_at
  FROM {{schema}}.functions f
  JOIN {{schema}}.function_aliases a ON a.function_id = f.id AND a.alias = $3
  JOIN {{schema}}.function_versions v ON v.function_id = f.id AND v.version = a.version
  JOIN {{schema}}.wasm_modules m ON m.sha256 = v.wasm_sha256
 WHERE f.account = $1 AND f.name = $2

-- name: get_version
SELECT f.name, v.version, v.wasm_sha256, m.size_bytes, v.memory_mib, v.timeout_ms, v.env, v.capabilities, v.created_at
  FROM {{schema}}.functions f
  JOIN {{schema}}.function_versions v ON v.function_id = f.id AND v.version = $3
  JOIN {{schema}}.wasm_modules m ON m.sha256 = v.wasm_sha256
 WHERE f.account = $1 AND f.name = $2

-- name: list_versions
SELECT f.name, v.version, v.wasm_sha256, m.size_bytes, v.memory_mib, v.timeout_ms, v.env, v.capabilities, v.created_at
  FROM {{schema}}.functions f
  JOIN {{schema}}.function_versions v ON v.function_id = f.id
  JOIN {{schema}}.wasm_modules m ON m.sha256 = v.wasm_sha256
 WHERE f.account = $1 AND f.name = $2
 ORDER BY v.version

-- name: list_functions
SELECT f.name, f.created_at,
       (SELECT max(version) FROM {{schema}}.function_versions v WHERE v.function_id = f.id),
       coalesce((SELECT jsonb_object_agg(alias, version) FROM {{schema}}.function_aliases a WHERE a.function_id = f.id), '{}'),
       coalesce((SELECT jsonb_object_agg(alias, previous_version) FROM {{schema}}.function_aliases a
                  WHERE a.function_id = f.id AND previous_version IS NOT NULL), '{}')
  FROM {{schema}}.functions f
 WHERE f.account = $1
 ORDER BY f.name

-- name: module
SELECT module FROM {{schema}}.wasm_modules WHERE sha256 = $1

-- name: delete_function
-- Deletes the function (its versions and aliases by cascade) and returns
-- the modules its versions used.
WITH f AS (DELETE FROM {{schema}}.functions WHERE account = $1 AND name = $2 RETURNING id)
SELECT EXISTS (SELECT 1 FROM f),
       array(SELECT DISTINCT v.wasm_sha256 FROM {{schema}}.function_versions v WHERE v.function_id IN (SELECT id FROM f))

-- name: lock_modules
-- Locks those of the modules $1 no deploy is storing right now (one that
-- is holds its row lock from store_module until it commits; skipped, it
-- stays).
SELECT sha256 FROM {{schema}}.wasm_modules WHERE sha256 = ANY ($1::bytea[]) FOR UPDATE SKIP LOCKED

-- name: delete_unused_modules
-- Deletes those of the modules $1, locked by lock_modules, that no
-- version uses, in any account (modules are shared by their hash). Run as
-- a statement of its own after the lock, its snapshot sees every deploy
-- that stored one of them before.
DELETE FROM {{schema}}.wasm_modules m
 WHERE m.sha256 = ANY ($1::bytea[])
   AND NOT EXISTS (SELECT 1 FROM {{schema}}.function_versions v WHERE v.wasm_sha256 = m.sha256)

-- name: resolve_many
-- The versions many (account, function, alias) refs point at, in one
-- statement; refs without such a function or alias yield no row.
SELECT r.account, r.alias, f.name, v.version, v.wasm_sha256, m.size_bytes, v.memory_mib, v.timeout_ms, v.env,
       v.capabilities, v.created_at
  FROM unnest($1::text[], $2::text[], $3::text[]) AS r(account, name, alias)
  JOIN {{schema}}.functions f ON f.account = r.account AND f.name = r.name
  JOIN {{schema}}.function_aliases a ON a.function_id = f.id AND a.alias = r.alias
  JOIN {{schema}}.function_versions v ON v.function_id = f.id AND v.version = a.version
  JOIN {{schema}}.wasm_modules m ON m.sha256 = v.wasm_sha256

-- name: set_function_app
UPDATE {{schema}}.functions SET app = $3 WHERE account = $1 AND name = $2

-- name: function_apps
SELECT name, app FROM {{schema}}.functions WHERE account = $1 ORDER BY name

-- name: function_id
SELECT id FROM {{schema}}.functions WHERE account = $1 AND name = $2

-- name: lock_account_deploys
-- Deploys of one account check its limits and store one at a time
-- (DeployWithin), until the transaction ends.
SELECT pg_advisory_xact_lock(hashtextextended('{{schema}}/deploys/' || $1, 0))

-- name: account_usage
-- The account's functions, whether $2 is one of them, the size of the
-- distinct modules its versions use, and whether module $3 is one of them.
SELECT (SELECT count(*) FROM {{schema}}.functions WHERE account = $1)::integer,
       EXISTS (SELECT 1 FROM {{schema}}.functions WHERE account = $1 AND name = $2),
       coalesce(sum(m.size_bytes), 0)::bigint,
       coalesce(bool_or(m.sha256 = $3), false)
  FROM {{schema}}.wasm_modules m
 WHERE m.sha256 IN (SELECT v.wasm_sha256
                      FROM {{schema}}.function_versions v
                      JOIN {{schema}}.functions f ON f.id = v.function_id
                     WHERE f.account = $1)
