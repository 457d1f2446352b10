-- What an account holds at once across every process serving the
-- database (server/accountslots.go): deploys compiling and log streams
-- open, each a leased slot numbered below its bound (maxAccountDeploys,
-- maxAccountLogStreams). A holder renews its lease while it holds the
-- slot and deletes the row when done; a slot whose lease ran out (its
-- process died) is free again, and its row is taken over by the next
-- holder of that number.
--
-- UNLOGGED: a crash or a failover empties it, which lets an account
-- start that many more deploys or streams at once for as long as those
-- held before the crash last; taking a slot costs no WAL flush.
CREATE UNLOGGED TABLE account_slots (
    account    text        NOT NULL,
    kind       text        NOT NULL CHECK (kind IN ('deploy', 'log_stream')),
    slot       integer     NOT NULL CHECK (slot >= 0),
    holder     text        NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (account, kind, slot)
);
