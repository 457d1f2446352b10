-- Back to 019's lock_groups and 020's queue_fail.
CREATE OR REPLACE FUNCTION lock_groups(p_queue_id bigint, p_groups text[]) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO message_groups AS g (queue_id, group_key, size)
    SELECT DISTINCT p_queue_id, k, 0 FROM unnest(p_groups) k
     WHERE length(k) BETWEEN 1 AND 128
     ORDER BY 2
    ON CONFLICT (queue_id, group_key) DO UPDATE SET size = g.size;
END
$$;

CREATE OR REPLACE FUNCTION queue_fail(p_queue_id bigint, p_account text, p_queue text, p_sequences bigint[],
                           p_receipts uuid[] DEFAULT NULL, p_reasons text[] DEFAULT NULL,
                           p_errors text[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT SET random_page_cost = 1.1 AS $$
DECLARE
    dlq queues;
    -- Several messages of a queue with groups: their groups are locked in
    -- order first (019), and so are their copies' (above).
    grouped boolean;
BEGIN
    PERFORM 1 FROM queues WHERE id = p_queue_id AND account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    grouped := cardinality(p_sequences) > 1 AND EXISTS (SELECT 1 FROM message_groups g WHERE g.queue_id = p_queue_id);
    IF grouped THEN
        PERFORM lock_groups_of(p_queue_id, p_sequences);
    END IF;
    SELECT d.* INTO dlq FROM queues q JOIN queues d ON d.id = q.dead_letter_queue_id WHERE q.id = p_queue_id;
    IF FOUND THEN
        IF grouped THEN
            -- The copies join the dead_letter_queue's groups: lock those in
            -- order too, after this queue's (the messages are locked: the
            -- ones whose receipts match are the ones that move).
            PERFORM lock_groups(dlq.id, ARRAY(
                SELECT m.group_key
                  FROM messages m
                  JOIN unnest(p_sequences, p_receipts) AS a(sequence, receipt) ON a.sequence = m.sequence
                 WHERE m.queue_id = p_queue_id AND (a.receipt IS NULL OR m.receipt = a.receipt)));
        END IF;
        -- The queue has a dead_letter_queue: the failed messages become new
        -- messages of that queue, ready at once. (On Citus that queue's
        -- shard may be on another node: the worker running this writes
        -- there itself.)
        RETURN QUERY
        WITH a AS (
            SELECT * FROM unnest(p_sequences, p_receipts, p_reasons, p_errors) AS a(sequence, receipt, reason, error)
        ), moved AS (
            DELETE FROM messages m
             USING a
             WHERE m.queue_id = p_queue_id AND m.sequence = a.sequence
               AND (a.receipt IS NULL OR m.receipt = a.receipt)
            RETURNING m.*, coalesce(a.reason, 'permanent_failure') AS reason, coalesce(a.error, m.last_error) AS error
        ), fwd AS (
            INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key)
            SELECT dlq.id, now(), moved.expires_at, moved.body,
                   dead_letter_headers(moved.headers, p_queue, moved.sequence, moved.reason, moved.error, moved.receive_count),
                   moved.group_key
              FROM moved
             ORDER BY moved.sequence
            RETURNING 1
        ), counted AS (
            INSERT INTO queue_minutes AS qm (queue_id, minute, dlq_moves)
            SELECT p_queue_id, current_minute(), count(*) FROM fwd HAVING count(*) > 0
            ON CONFLICT (queue_id, minute) DO UPDATE SET dlq_moves = qm.dlq_moves + excluded.dlq_moves
        )
        SELECT moved.sequence FROM moved;
        PERFORM wake(dlq.id, dlq.account, dlq.name);
        RETURN;
    END IF;
    RETURN QUERY
    WITH a AS (
        SELECT * FROM unnest(p_sequences, p_receipts, p_reasons, p_errors) AS a(sequence, receipt, reason, error)
    ), moved AS (
        DELETE FROM messages m
         USING a
         WHERE m.queue_id = p_queue_id AND m.sequence = a.sequence
           AND (a.receipt IS NULL OR m.receipt = a.receipt)
        RETURNING m.*, coalesce(a.reason, 'permanent_failure') AS reason, coalesce(a.error, m.last_error) AS error
    ), ins AS (
        INSERT INTO dead_letters (queue_id, sequence, body, headers, receive_count, created_at, expires_at, reason, last_error,
                                  group_key)
        SELECT p_queue_id, moved.sequence, moved.body, moved.headers, moved.receive_count, moved.created_at, moved.expires_at,
               moved.reason, moved.error, moved.group_key
          FROM moved
        ON CONFLICT (queue_id, sequence) DO NOTHING
        RETURNING 1
    ), counted AS (
        INSERT INTO queue_minutes AS qm (queue_id, minute, dlq_moves)
        SELECT p_queue_id, current_minute(), count(*) FROM ins HAVING count(*) > 0
        ON CONFLICT (queue_id, minute) DO UPDATE SET dlq_moves = qm.dlq_moves + excluded.dlq_moves
    )
    SELECT moved.sequence FROM moved;
END
$$;

