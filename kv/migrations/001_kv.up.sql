-- Key-value stores of functions (Function ABI v1.1): per account, named
-- stores of byte keys and values, with an optional expiry. Applied after
-- the queue core (it references accounts). A store exists while it holds
-- keys; a function opens only the stores its manifest lists.

CREATE TABLE kv_entries (
    account    text        NOT NULL REFERENCES accounts (number) ON DELETE CASCADE,
    store      text        NOT NULL CHECK (store ~ '^[A-Za-z0-9_-]{1,80}$'),
    key        bytea       NOT NULL CHECK (octet_length(key) BETWEEN 1 AND 1024),
    value      bytea       NOT NULL,
    -- NULL: never expires. An expired entry reads as absent until the
    -- sweeper deletes it.
    expires_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account, store, key)
);

CREATE INDEX kv_entries_expiry ON kv_entries (expires_at) WHERE expires_at IS NOT NULL;

-- The live entries, for inspection with SQL: keys and values as bytea and
-- as text (escaped where not printable).
CREATE VIEW kv AS
SELECT account, store,
       encode(key, 'escape')   AS key_text,
       encode(value, 'escape') AS value_text,
       octet_length(value)     AS size_bytes,
       expires_at, created_at, updated_at, key, value
  FROM kv_entries
 WHERE expires_at IS NULL OR expires_at > now();
