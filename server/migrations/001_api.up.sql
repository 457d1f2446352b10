-- The HTTP API's tables: access keys, webhook hooks, and the delivery ids
-- of webhooks already enqueued (deduplication). Applied after the queue
-- core, the function registry and the triggers.
--
-- Ownership: access_keys is the server's. hooks and webhook_deliveries
-- belong to package triggers, which alone reads and writes them
-- (triggers/hooks.go); they are created here only because this migration
-- was applied before that move, and moving them would change the history
-- of existing databases (see RATIONALE.md, "Seams between packages").
-- Later migrations of those two tables go in this line too: the triggers'
-- line applies before it, when the tables do not exist yet.

-- Access keys. Only the SHA-256 of the secret is stored; the secret is
-- shown once, when the key is created. scopes are mq:send, mq:receive,
-- mq:delete, mq:purge, mq:admin, mq:* and functions:deploy; queues are
-- path.Match patterns limiting the data plane ('*' = every queue).
CREATE TABLE access_keys (
    id          text        PRIMARY KEY CHECK (id ~ '^sk_[a-z0-9]{20}$'),
    account     text        NOT NULL REFERENCES accounts (number) ON DELETE CASCADE,
    secret_hash bytea       NOT NULL CHECK (length(secret_hash) = 32),
    scopes      text[]      NOT NULL,
    queues      text[]      NOT NULL DEFAULT '{*}',
    description text        NOT NULL DEFAULT '' CHECK (length(description) <= 200),
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

CREATE INDEX access_keys_account ON access_keys (account, created_at);

-- Webhook hooks: POST /hooks/{account}/{name} is verified with verify and
-- secrets (kept as given: an HMAC needs the secret itself) and enqueued to
-- queue.
CREATE TABLE hooks (
    account    text        NOT NULL REFERENCES accounts (number) ON DELETE CASCADE,
    name       text        NOT NULL CHECK (name ~ '^[A-Za-z0-9_-]{1,80}$'),
    queue      text        NOT NULL CHECK (queue ~ '^[A-Za-z0-9_-]{1,80}$'),
    verify     text        NOT NULL CHECK (verify IN ('standard', 'github', 'stripe', 'none')),
    secrets    text[]      NOT NULL DEFAULT '{}',
    source     text        NOT NULL DEFAULT 'api' CHECK (source IN ('manifest', 'api')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account, name)
);

-- One row per webhook delivery enqueued, inserted in the same transaction
-- as the message: a replay of the delivery id finds the row and enqueues
-- nothing. Rows older than 7 days are pruned.
CREATE TABLE webhook_deliveries (
    account     text        NOT NULL,
    hook        text        NOT NULL,
    delivery_id text        NOT NULL,
    sequence    bigint,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account, hook, delivery_id)
) WITH (autovacuum_vacuum_scale_factor = 0.05);

CREATE INDEX webhook_deliveries_received_at ON webhook_deliveries (received_at);
