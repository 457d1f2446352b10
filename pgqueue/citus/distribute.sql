-- Distribute Sluice's queue tables on a Citus cluster (issue #19).
--
-- Run by pgqueue/citus.Distribute on the coordinator, after the ordinary
-- migrations, with search_path set to the Sluice schema (so names are
-- unqualified, as in the migrations; by hand: SET search_path = sluice).
-- Every step is skipped when already done, so running it again changes
-- nothing.
--
-- - The per-queue tables are distributed by queue_id and co-located with
--   messages: a queue's messages, dead letters, dedup keys, groups, minutes
--   and wake-up interest live on one shard, so receive, ack and a DLQ move
--   touch one worker.
-- - The small tables (accounts, queues, topics, subscriptions,
--   depth_samples) become reference tables, copied to every node, so each
--   shard can join them locally. The other lines' tables stay plain tables
--   on the coordinator (see below about their foreign keys).
--
-- messages has triggers (message groups, migration 008) that write
-- message_groups, a co-located table; Citus distributes such a table, and
-- runs its triggers on the shards, only with citus.enable_unsafe_triggers
-- on: for this session and, for every later session, the database.
SET citus.enable_unsafe_triggers = on;
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase
                    WHERE d.datname = current_database() AND s.setrole = 0
                      AND 'citus.enable_unsafe_triggers=on' = ANY (s.setconfig)) THEN
        EXECUTE format('ALTER DATABASE %I SET citus.enable_unsafe_triggers = on', current_database());
    END IF;
END
$$;

DO $$
DECLARE
    t text;
    small regclass[] := ARRAY['accounts', 'queues', 'topics', 'subscriptions', 'depth_samples']::regclass[];
    fk record;
    readd text[] := '{}';
    stmt text;
BEGIN
    IF EXISTS (SELECT 1 FROM unnest(small) r
                WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = r AND p.repmodel = 't')) THEN
        -- Made a reference table, accounts would turn every local table
        -- with a foreign key to it into a Citus local table, which Citus
        -- does by renaming the table to its shard's name (functions typed
        -- with its row type, apply_queue_options(queues, jsonb), would then
        -- name the shard), and whose upserts may then not use now() (the
        -- other lines' statements do). So the foreign keys touching these
        -- tables are dropped, the tables made reference tables, and the
        -- keys among them added again. The other lines' tables (functions,
        -- triggers, keys, kv, ...) stay plain tables on the coordinator,
        -- without their foreign key to accounts: Sluice never deletes an
        -- account, so what is lost is the check that a new row names an
        -- existing account.
        FOR fk IN
            SELECT c.conrelid::regclass AS tbl, c.conname AS name, pg_get_constraintdef(c.oid) AS def
              FROM pg_constraint c
             WHERE c.contype = 'f' AND (c.conrelid = ANY (small) OR c.confrelid = ANY (small))
             ORDER BY c.conrelid::regclass::text, c.conname
        LOOP
            IF fk.tbl = ANY (small) THEN
                readd := readd || format('ALTER TABLE %s ADD CONSTRAINT %I %s', fk.tbl, fk.name, fk.def);
            END IF;
            EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', fk.tbl, fk.name);
        END LOOP;
        FOREACH t IN ARRAY small::text[] LOOP
            IF NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = t::regclass AND repmodel = 't') THEN
                PERFORM create_reference_table(t::regclass);
            END IF;
        END LOOP;
        FOREACH stmt IN ARRAY readd LOOP
            EXECUTE stmt;
        END LOOP;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'messages'::regclass) THEN
        PERFORM create_distributed_table('messages'::regclass, 'queue_id', colocate_with => 'none');
    END IF;
    FOREACH t IN ARRAY ARRAY['dead_letters', 'dedup_keys', 'message_groups', 'queue_minutes', 'wake_interest'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = t::regclass) THEN
            PERFORM create_distributed_table(t::regclass, 'queue_id', colocate_with => 'messages');
        END IF;
    END LOOP;
END
$$;

-- Message sequences are drawn on the node holding the queue's shard
-- (migration 013): a default is evaluated on the node that plans the
-- statement (the coordinator), which would draw from the coordinator's
-- range of message_sequence, so on Citus messages.sequence defaults to the
-- marker -1 and the BEFORE INSERT trigger messages_sequence_draw (and
-- dedup_keys_sequence_draw) draws the sequence on the shard's worker, from
-- that worker's range. This needs message_sequence on every node: Citus
-- created it on the workers when it distributed messages (the sequence was
-- the column's default then) and creates it on nodes added later, as long
-- as it is a distributed object, which is checked here before the default
-- changes. The triggers are on the shards: they existed when the tables
-- were distributed, or were created afterwards with
-- citus.enable_unsafe_triggers on (set above for the database), which
-- Citus propagates.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_dist_object
                    WHERE classid = 'pg_class'::regclass AND objid = 'message_sequence'::regclass) THEN
        RAISE EXCEPTION 'message_sequence is not a distributed object, so the workers may not have it: distribute messages while its sequence column defaults to nextval(''message_sequence'')';
    END IF;
    IF pg_get_expr((SELECT d.adbin FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
                     WHERE d.adrelid = 'messages'::regclass AND a.attname = 'sequence'), 'messages'::regclass)
       IS DISTINCT FROM '''-1''::integer' THEN
        ALTER TABLE messages ALTER COLUMN sequence SET DEFAULT -1;
    END IF;
END
$$;

-- Migration 016 keeps the claims' generic plan (plan_cache_mode =
-- force_generic_plan), which Citus cannot make of a distributed UPDATE
-- ("could not create distributed plan"): on Citus they are planned on
-- every call, as before 016.
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'queue_receive(bigint, text, text, integer, integer)',
        'queue_receive_delete(bigint, text, text, integer)'
    ]::regprocedure[] LOOP
        IF EXISTS (SELECT 1 FROM pg_proc p, unnest(p.proconfig) c
                    WHERE p.oid = f AND c LIKE 'plan\_cache\_mode=%') THEN
            EXECUTE format('ALTER FUNCTION %s RESET plan_cache_mode', f);
        END IF;
    END LOOP;
END
$$;

-- The hot path keyed by queue id (migration 014) is delegated to the node
-- holding the queue's shard: distributed by p_queue_id, co-located with
-- messages, a call `SELECT ... FROM queue_receive(id, ...)` outside a
-- transaction block runs on that worker as one statement. Inside a
-- BEGIN ... COMMIT block Citus does not delegate them (no force_delegation):
-- a delegated call there would have to be prepared with the surrounding
-- transaction (two-phase commit), which Postgres refuses once the call has
-- sent a NOTIFY (the wake-up of a send), and a force-delegated function may
-- not write to another shard (queue_fail moving messages to a
-- dead_letter_queue on another node). See docs/scale-out.md, "The hot path
-- on the workers".
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'queue_send(bigint, text, text, jsonb, integer, jsonb, integer, text, text)',
        'queue_send_batch(bigint, text, text, jsonb[], integer, jsonb[], integer[], integer[], text[], text[])',
        'queue_receive(bigint, text, text, integer, integer)',
        'queue_receive_delete(bigint, text, text, integer)',
        'queue_delete(bigint, text, text, bigint, uuid, boolean)',
        'queue_ack(bigint, text, text, bigint[], uuid[], boolean)',
        'queue_nack(bigint, text, text, bigint[], uuid[], integer[], text[])',
        'queue_fail(bigint, text, text, bigint[], uuid[], text[], text[])',
        'queue_release(bigint, text, text, bigint[], uuid[])',
        'queue_set_visibility(bigint, text, text, bigint, integer, uuid)'
    ]::regprocedure[] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_dist_object o
                        WHERE o.classid = 'pg_proc'::regclass AND o.objid = f
                          AND o.distribution_argument_index IS NOT NULL) THEN
            PERFORM create_distributed_function(f, 'p_queue_id', colocate_with := 'messages');
        END IF;
    END LOOP;
END
$$;
