-- Distribute the triggers' invocation log on a Citus cluster (issue #19).
--
-- Run by pgqueue/citus.Distribute on the coordinator after
-- pgqueue/citus/distribute.sql (messages distributed, the session's
-- citus.enable_unsafe_triggers on), with search_path set to the Sluice
-- schema. Every step is skipped when already done.
--
-- invocations is distributed by queue_id, co-located with messages, and
-- settle_invocations (migration 007) by p_queue_id: a batch's settlement
-- and its invocation record are then on the queue's shard, and the call is
-- delegated to that worker, which commits it alone. Records with
-- queue_id 0 (see 007) live on the shard of 0, wherever that is; the
-- reads of the log (list, follow, metrics) read every shard.
--
-- Citus wants the distribution column in the primary key: (id) becomes
-- (id, queue_id); ids stay unique, drawn from the one identity sequence on
-- the coordinator (next_invocation_ids). The table's BEFORE INSERT
-- triggers run on the shards: invocation_log_position (007) uses the
-- writing node's clock; invocation_trigger_name (005), which reads the
-- coordinator's triggers table, fires only for a record inserted without
-- its trigger name, which the engine never does (by hand on Citus, give
-- trigger).
-- The table and the function are distributed in one transaction (this
-- file is one Exec); Citus distributes a function in that transaction only
-- after shard work done one shard at a time ("cannot run function command
-- because there was a parallel operation on a distributed table").
SET citus.multi_shard_modify_mode TO 'sequential';
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'invocations'::regclass) THEN
        ALTER TABLE invocations DROP CONSTRAINT invocations_pkey;
        ALTER TABLE invocations ADD PRIMARY KEY (id, queue_id);
        PERFORM create_distributed_table('invocations'::regclass, 'queue_id', colocate_with => 'messages');
        -- Records written before (an upgrade) were copied to the shards;
        -- their local copy on the coordinator goes.
        PERFORM truncate_local_data_after_distributing_table('invocations'::regclass);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_dist_object o
                    WHERE o.classid = 'pg_proc'::regclass
                      AND o.objid = 'settle_invocations(bigint, text, text, bigint[], uuid[], bigint[], uuid[], integer[], text[], bigint[], uuid[], text[], text[], boolean, text, integer, bigint, text, text, text, bigint[], integer[], timestamptz[], double precision[], text[], text[], text[], integer[], integer[], integer[], text[], text[], integer[], integer[], bigint[], bigint[])'::regprocedure
                      AND o.distribution_argument_index IS NOT NULL) THEN
        PERFORM create_distributed_function(
            'settle_invocations(bigint, text, text, bigint[], uuid[], bigint[], uuid[], integer[], text[], bigint[], uuid[], text[], text[], boolean, text, integer, bigint, text, text, text, bigint[], integer[], timestamptz[], double precision[], text[], text[], text[], integer[], integer[], integer[], text[], text[], integer[], integer[], bigint[], bigint[])'::regprocedure,
            'p_queue_id', colocate_with := 'messages');
    END IF;
END
$$;
