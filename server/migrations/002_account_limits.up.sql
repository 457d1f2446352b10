-- Per-account limits of what the HTTP API lets an account create (see
-- SECURITY.md). A NULL column takes the server's default (Config.Limits);
-- an account without a row takes every default. The server owns this
-- table: (*server.Server).SetAccountLimits writes it.
CREATE TABLE account_limits (
    account      text        PRIMARY KEY REFERENCES accounts (number) ON DELETE CASCADE,
    queues       integer     CHECK (queues >= 0),
    functions    integer     CHECK (functions >= 0),
    triggers     integer     CHECK (triggers >= 0),
    hooks        integer     CHECK (hooks >= 0),
    keys         integer     CHECK (keys >= 0),
    module_bytes bigint      CHECK (module_bytes >= 0),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
