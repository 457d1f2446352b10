-- lock_groups (019) as routed inserts on Citus.
--
-- 019's lock_groups creates and locks a batch's groups with one
-- INSERT ... SELECT from the array of keys. On Citus that statement
-- cannot be routed to the queue's shard: Citus collects the SELECT's
-- rows as an intermediate result first and then inserts them from it,
-- a round more for every grouped send (make test-citus,
-- pgqueue/citus/TestSendBatchRoutedToTheShard, found it). On Citus each
-- distinct key now gets an INSERT ... VALUES of its own, in key order as
-- before, which Citus routes to the shard like any single-row insert; a
-- batch's keys are few (one for most batches). Plain Postgres keeps the
-- single statement.

CREATE OR REPLACE FUNCTION lock_groups(p_queue_id bigint, p_groups text[]) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    next_key text;
BEGIN
    IF current_setting('citus.version', true) IS NULL THEN
        INSERT INTO message_groups AS g (queue_id, group_key, size)
        SELECT DISTINCT p_queue_id, k, 0 FROM unnest(p_groups) k
         WHERE length(k) BETWEEN 1 AND 128
         ORDER BY 2
        ON CONFLICT (queue_id, group_key) DO UPDATE SET size = g.size;
        RETURN;
    END IF;
    FOR next_key IN SELECT DISTINCT u.k FROM unnest(p_groups) u(k) WHERE length(u.k) BETWEEN 1 AND 128 ORDER BY 1 LOOP
        INSERT INTO message_groups AS g (queue_id, group_key, size) VALUES (p_queue_id, next_key, 0)
        ON CONFLICT (queue_id, group_key) DO UPDATE SET size = g.size;
    END LOOP;
END
$$;
