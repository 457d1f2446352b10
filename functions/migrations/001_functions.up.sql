-- The function registry: WASM modules stored once by content hash, numbered
-- immutable versions of each function, and aliases (such as live) pointing
-- at one version each. Applied after the queue core (it references accounts).

CREATE TABLE wasm_modules (
    sha256     bytea       PRIMARY KEY CHECK (length(sha256) = 32),
    module     bytea       NOT NULL,
    size_bytes integer     NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE functions (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account    text        NOT NULL REFERENCES accounts (number) ON DELETE CASCADE,
    name       text        NOT NULL CHECK (name ~ '^[A-Za-z0-9_-]{1,80}$'),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (account, name)
);

-- A version never changes once written; a new module or config is a new
-- version.
CREATE TABLE function_versions (
    function_id bigint      NOT NULL REFERENCES functions (id) ON DELETE CASCADE,
    version     integer     NOT NULL CHECK (version > 0),
    wasm_sha256 bytea       NOT NULL REFERENCES wasm_modules (sha256),
    memory_mib  integer     NOT NULL CHECK (memory_mib BETWEEN 1 AND 4096),
    timeout_ms  integer     NOT NULL CHECK (timeout_ms BETWEEN 1 AND 900000),
    env         jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(env) = 'object'),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (function_id, version)
);

-- previous_version is where a rollback moves the alias back to.
CREATE TABLE function_aliases (
    function_id      bigint      NOT NULL,
    alias            text        NOT NULL CHECK (alias ~ '^[A-Za-z0-9_-]{1,80}$'),
    version          integer     NOT NULL,
    previous_version integer,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (function_id, alias),
    FOREIGN KEY (function_id, version) REFERENCES function_versions (function_id, version) ON DELETE CASCADE
);

-- Readable from psql: every function with its versions and where aliases point.
CREATE VIEW function_overview AS
SELECT f.account, f.name AS function, v.version, encode(v.wasm_sha256, 'hex') AS sha256,
       m.size_bytes, v.memory_mib, v.timeout_ms, v.created_at,
       coalesce(array_agg(a.alias ORDER BY a.alias) FILTER (WHERE a.alias IS NOT NULL), '{}') AS aliases
  FROM functions f
  JOIN function_versions v ON v.function_id = f.id
  JOIN wasm_modules m ON m.sha256 = v.wasm_sha256
  LEFT JOIN function_aliases a ON a.function_id = f.id AND a.version = v.version
 GROUP BY f.account, f.name, v.version, v.wasm_sha256, m.size_bytes, v.memory_mib, v.timeout_ms, v.created_at;
