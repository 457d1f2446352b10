-- The invocation log's large values compressed with lz4 (issue #18).
--
-- A record's message_ids holds one bigint per message of its batch: at
-- batch 1,000 about 8 KB, which Postgres compresses before storing it out
-- of line (TOAST). With its default method, pglz, that took ~1.3 ms of
-- CPU a record, ~1.3 µs for every message a trigger drained at that batch
-- size: 500 such inserts took 715-730 ms with pglz, 83-108 ms with lz4
-- (BENCHMARKS.md, the 2026-12-03 03:54 entry, "The log's compression").
-- stderr and emitted_messages, written once per record too, get the same
-- method. Rows already written keep theirs; reading either needs nothing.
--
-- lz4 is a build option of Postgres (--with-lz4; Debian's and the PGDG
-- packages and the official container images have it). Without it the
-- columns keep pglz, which only costs that CPU. Citus propagates SET
-- COMPRESSION to the shards of a distributed table.
DO $$
BEGIN
    ALTER TABLE invocations ALTER COLUMN message_ids SET COMPRESSION lz4,
                            ALTER COLUMN stderr SET COMPRESSION lz4,
                            ALTER COLUMN emitted_messages SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'invocations keep compression pglz: %', SQLERRM;
END
$$;
