-- Failed authentications, shared by every process serving the database:
-- one token bucket per subject (a client address, or 'key ' || a key id
-- for wrong secrets given for that key), so that N processes allow one
-- budget between them, not N (server/auth.go, authLimiter). A process
-- still answers 429 from its own copy, without a query; it writes here on
-- a failure and takes the shared count back.
--
-- UNLOGGED: a crash or a failover empties it, which only forgives the
-- last minute's failures, and a failure costs no WAL flush. Rows whose
-- bucket has refilled are deleted (prune_auth_failures).
CREATE UNLOGGED TABLE auth_failures (
    subject text             PRIMARY KEY CHECK (length(subject) <= 100),
    tokens  double precision NOT NULL,
    at      timestamptz      NOT NULL
);

CREATE INDEX auth_failures_at ON auth_failures (at);
