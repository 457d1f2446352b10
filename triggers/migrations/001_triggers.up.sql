-- Triggers (what runs a function: a queue, a queue's DLQ, or a cron
-- schedule), the cron ticks processes claim so each tick runs once, and the
-- invocation log. Applied after the queue core and the function registry.

CREATE TABLE triggers (
    id                 bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account            text        NOT NULL REFERENCES accounts (number) ON DELETE CASCADE,
    -- name identifies the trigger for declarative applies and the API.
    name               text        NOT NULL CHECK (name ~ '^[A-Za-z0-9_.:@-]{1,200}$'),
    kind               text        NOT NULL CHECK (kind IN ('queue', 'cron')),
    -- function is NULL for a cron trigger that only enqueues.
    function           text        CHECK (function ~ '^[A-Za-z0-9_-]{1,80}$'),
    alias              text        NOT NULL DEFAULT 'live',
    -- queue: the queue consumed (kind queue) or sent to (cron with enqueue_body).
    queue              text        CHECK (queue ~ '^[A-Za-z0-9_-]{1,80}$'),
    dlq                boolean     NOT NULL DEFAULT false,
    batch_size         integer     NOT NULL DEFAULT 10 CHECK (batch_size BETWEEN 1 AND 1000),
    batch_window_ms    integer     NOT NULL DEFAULT 0 CHECK (batch_window_ms BETWEEN 0 AND 60000),
    concurrency        integer     NOT NULL DEFAULT 1 CHECK (concurrency BETWEEN 1 AND 256),
    ack_policy         text        NOT NULL DEFAULT 'ack' CHECK (ack_policy IN ('ack', 'reject_on_error', 'ack_first')),
    backoff_initial_ms integer     NOT NULL DEFAULT 1000 CHECK (backoff_initial_ms BETWEEN 0 AND 43200000),
    backoff_max_ms     integer     NOT NULL DEFAULT 300000 CHECK (backoff_max_ms BETWEEN 0 AND 43200000),
    -- lease_extension keeps extending a running batch's lease.
    lease_extension    boolean     NOT NULL DEFAULT true,
    cron_spec          text,
    timezone           text        NOT NULL DEFAULT 'UTC',
    enqueue_body       jsonb,
    enabled            boolean     NOT NULL DEFAULT true,
    -- source is 'manifest' for triggers a manifest apply owns (and may
    -- remove when they leave the manifest) or 'api'.
    source             text        NOT NULL DEFAULT 'api' CHECK (source IN ('manifest', 'api')),
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (account, name),
    CHECK (kind <> 'queue' OR (queue IS NOT NULL AND function IS NOT NULL)),
    CHECK (kind <> 'cron' OR (cron_spec IS NOT NULL AND (function IS NOT NULL) <> (enqueue_body IS NOT NULL)))
);

-- One row per cron tick that ran: the primary key lets exactly one process
-- claim a tick.
CREATE TABLE cron_ticks (
    trigger_id     bigint      NOT NULL REFERENCES triggers (id) ON DELETE CASCADE,
    scheduled_time timestamptz NOT NULL,
    claimed_at     timestamptz NOT NULL DEFAULT now(),
    claimed_by     text        NOT NULL,
    PRIMARY KEY (trigger_id, scheduled_time)
);

-- Every invocation of a function: "what failed and why" is one query.
--   SELECT function, version, outcome, error FROM sluice.invocations
--    WHERE outcome <> 'success' ORDER BY started_at DESC LIMIT 20;
CREATE TABLE invocations (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account      text        NOT NULL,
    function     text        NOT NULL,
    version      integer     NOT NULL,
    trigger_id   bigint,
    trigger_type text        NOT NULL,
    source       text        NOT NULL,
    batch_size   integer     NOT NULL,
    started_at   timestamptz NOT NULL,
    duration_ms  double precision NOT NULL,
    -- success, partial_failure (some messages failed) or failure (the batch failed)
    outcome      text        NOT NULL CHECK (outcome IN ('success', 'partial_failure', 'failure')),
    failure_kind text,
    error        text,
    acked        integer     NOT NULL DEFAULT 0,
    retried      integer     NOT NULL DEFAULT 0,
    dead         integer     NOT NULL DEFAULT 0,
    message_ids  bigint[]    NOT NULL DEFAULT '{}',
    stderr       text
) WITH (autovacuum_vacuum_scale_factor = 0.05);

CREATE INDEX invocations_started_at ON invocations (started_at);
CREATE INDEX invocations_function ON invocations (account, function, started_at DESC);
