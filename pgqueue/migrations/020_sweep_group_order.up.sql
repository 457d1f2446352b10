-- The last paths that took several ordered groups' locks in the order
-- their rows came (migration 019 ordered the others).
--
-- queue_fail into a dead_letter_queue: the copies of the failed messages
-- join that queue's groups. 019 locked the failing queue's groups in
-- order; the copies' groups were locked by their inserts, in sequence
-- order, so a failure across groups b then a and a send or another
-- failure into the dead_letter_queue's a then b could each hold one and
-- wait for the other. Now they are locked with lock_groups, in key order,
-- after the failing queue's (005 refuses dead_letter_queue cycles, so
-- "a queue, then its dead_letter_queue" is one order across queues).
--
-- sweep: its three moves of messages (final leases that expired, to the
-- dead-letter table or the dead_letter_queue; expired messages; retention)
-- picked their messages with SKIP LOCKED and deleted them, each delete's
-- trigger locking its group as it came, and one sweep is one transaction
-- over every queue, so it could hold a dead_letter_queue's groups
-- (forwarded from one queue) while it waited for another queue's: no
-- order per statement rules that out. Now the sweep does not wait for
-- groups at all: of the messages it picked, it moves those whose groups
-- (and, when forwarded, the copies' groups) it can lock at once, with
-- SKIP LOCKED, in key order (sweep_lock_groups); the others wait for the
-- next sweep, a second later. The one wait left is an insert of a
-- dead_letter_queue's group that another transaction is inserting too;
-- sweep_lock_groups runs with lock_timeout 100 ms, so that the sweep gives
-- up there (and runs again at the next tick) long before the 1 s
-- (deadlock_timeout) after which Postgres would fail a member of a cycle
-- through it with 40P01. (The sweep's other waits, on tables locked by
-- maintenance, say, are as before.)

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


-- Of the messages p_sequences of queue p_queue_id, which the caller has
-- locked, the ones the sweep may move now: the ungrouped ones, and those
-- whose group it could lock without waiting (and, when they are forwarded
-- to the queue p_forward_to, the copies' group there too, made empty when
-- it does not exist). It takes those locks, in group-key order, waiting
-- at most lock_timeout for a group being created by another transaction.
CREATE FUNCTION sweep_lock_groups(p_queue_id bigint, p_sequences bigint[], p_forward_to bigint) RETURNS bigint[]
LANGUAGE plpgsql SET search_path FROM CURRENT SET lock_timeout = '100ms' AS $$
DECLARE
    got text[];
BEGIN
    IF cardinality(p_sequences) = 0 OR NOT EXISTS (SELECT 1 FROM message_groups g WHERE g.queue_id = p_queue_id) THEN
        RETURN p_sequences;
    END IF;
    got := ARRAY(SELECT g.group_key FROM message_groups g
                  WHERE g.queue_id = p_queue_id
                    AND g.group_key IN (SELECT m.group_key FROM messages m
                                         WHERE m.queue_id = p_queue_id AND m.sequence = ANY (p_sequences))
                  ORDER BY g.group_key
                    FOR UPDATE SKIP LOCKED);
    IF p_forward_to IS NOT NULL AND cardinality(got) > 0 THEN
        INSERT INTO message_groups (queue_id, group_key, size)
        SELECT p_forward_to, k, 0 FROM unnest(got) k ORDER BY 2
        ON CONFLICT (queue_id, group_key) DO NOTHING;
        got := ARRAY(SELECT g.group_key FROM message_groups g
                      WHERE g.queue_id = p_forward_to AND g.group_key = ANY (got)
                      ORDER BY g.group_key
                        FOR UPDATE SKIP LOCKED);
    END IF;
    RETURN ARRAY(SELECT m.sequence FROM messages m
                  WHERE m.queue_id = p_queue_id AND m.sequence = ANY (p_sequences)
                    AND (m.group_key IS NULL OR m.group_key = ANY (got)));
END
$$;

-- As in 013, its moves limited to the messages sweep_lock_groups allows.
CREATE OR REPLACE FUNCTION sweep() RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    t timestamptz := now();
    total bigint := 0;
    n bigint;
    moved_to_dlq bigint[] := '{}';
    forwarded_to bigint[] := '{}';
    moved messages[];
    picked bigint[];
    q queues;
    w record;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('sluice.sweep'), hashtext(current_schema())) THEN
        RETURN 0;
    END IF;

    -- Final leases that expired: to the queue's DLQ table, or forwarded to
    -- its dead_letter_queue as a new message, ready at once.
    FOR q IN
        SELECT * FROM queues
         WHERE id IN (SELECT DISTINCT queue_id FROM messages WHERE final_lease AND visible_at <= t)
         ORDER BY id
    LOOP
        -- Picked first, then limited, in two statements: on Citus a call
        -- beside a query of one shard would run on that shard's node, and
        -- its locks in the dead_letter_queue's shard would be taken there,
        -- apart from the coordinator's inserts of the copies.
        picked := ARRAY(SELECT sequence FROM messages
                         WHERE queue_id = q.id AND final_lease AND visible_at <= t
                         ORDER BY visible_at
                         LIMIT 10000
                           FOR UPDATE SKIP LOCKED);
        picked := sweep_lock_groups(q.id, picked, q.dead_letter_queue_id);
        WITH gone AS (
            DELETE FROM messages m
             WHERE m.queue_id = q.id AND m.sequence = ANY (picked)
            RETURNING m AS msg
        )
        -- Whole rows of type messages (Citus ships rows as text, which an
        -- anonymous record type cannot be read back from).
        SELECT array_agg(g.msg ORDER BY (g.msg).sequence) INTO moved FROM gone g;
        CONTINUE WHEN moved IS NULL;
        IF q.dead_letter_queue_id IS NULL THEN
            WITH ins AS (
                INSERT INTO dead_letters (queue_id, sequence, body, headers, receive_count, created_at, expires_at, reason, last_error,
                                          group_key)
                SELECT queue_id, sequence, body, headers, receive_count, created_at, expires_at, 'max_receive_count', last_error,
                       group_key
                  FROM unnest(moved)
                ON CONFLICT (queue_id, sequence) DO NOTHING
                RETURNING queue_id
            )
            SELECT moved_to_dlq || coalesce(array_agg(queue_id), '{}') INTO moved_to_dlq FROM ins;
        ELSE
            INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key)
            SELECT q.dead_letter_queue_id, t, expires_at, body,
                   dead_letter_headers(headers, q.name, sequence, 'max_receive_count', last_error, receive_count),
                   group_key
              FROM unnest(moved)
             ORDER BY sequence;
            moved_to_dlq := moved_to_dlq || array_fill(q.id, ARRAY[cardinality(moved)]);
            forwarded_to := forwarded_to || q.dead_letter_queue_id;
        END IF;
    END LOOP;
    FOR w IN SELECT f.id, f.account, f.name FROM queues f WHERE f.id = ANY (forwarded_to) LOOP
        PERFORM wake(w.id, w.account, w.name);
    END LOOP;
    n := cardinality(moved_to_dlq);
    IF n > 0 THEN
        PERFORM count_dlq_moves(moved_to_dlq);
    END IF;
    total := total + n;

    -- Expired messages.
    FOR q IN
        SELECT * FROM queues
         WHERE id IN (SELECT DISTINCT queue_id FROM messages WHERE expires_at IS NOT NULL AND expires_at <= t)
         ORDER BY id
    LOOP
        picked := ARRAY(SELECT sequence FROM messages
                         WHERE queue_id = q.id AND expires_at IS NOT NULL AND expires_at <= t
                         ORDER BY expires_at
                         LIMIT 10000
                           FOR UPDATE SKIP LOCKED);
        picked := sweep_lock_groups(q.id, picked, NULL);
        DELETE FROM messages m WHERE m.queue_id = q.id AND m.sequence = ANY (picked);
        GET DIAGNOSTICS n = ROW_COUNT;
        total := total + n;
    END LOOP;

    -- Retention. Sequences grow with time, so the oldest messages of a queue
    -- are at the head of its primary key: only queues whose head is past
    -- retention are visited, and each visit reads at most 1,000 rows.
    FOR q IN SELECT * FROM queues ORDER BY id LOOP
        CONTINUE WHEN NOT coalesce((SELECT f.created_at FROM messages f WHERE f.queue_id = q.id ORDER BY f.sequence LIMIT 1)
                                   < t - make_interval(secs => q.retention_seconds), false);
        picked := ARRAY(SELECT h.sequence
                          FROM (SELECT o.sequence, o.created_at FROM messages o
                                 WHERE o.queue_id = q.id
                                 ORDER BY o.sequence
                                 LIMIT 1000
                                   FOR UPDATE SKIP LOCKED) h
                         WHERE h.created_at < t - make_interval(secs => q.retention_seconds));
        picked := sweep_lock_groups(q.id, picked, NULL);
        DELETE FROM messages m WHERE m.queue_id = q.id AND m.sequence = ANY (picked);
        GET DIAGNOSTICS n = ROW_COUNT;
        total := total + n;
    END LOOP;

    FOR q IN
        SELECT * FROM queues
         WHERE id IN (SELECT DISTINCT d.queue_id FROM dead_letters d JOIN queues dq ON dq.id = d.queue_id
                       WHERE d.failed_at < t - make_interval(secs => dq.retention_seconds))
         ORDER BY id
    LOOP
        DELETE FROM dead_letters d
         WHERE d.queue_id = q.id
           AND d.sequence = ANY (ARRAY(
               SELECT o.sequence FROM dead_letters o
                WHERE o.queue_id = q.id
                  AND o.failed_at < t - make_interval(secs => q.retention_seconds)
                ORDER BY o.failed_at
                LIMIT 1000
                  FOR UPDATE SKIP LOCKED));
    END LOOP;

    FOR q IN
        SELECT * FROM queues
         WHERE id IN (SELECT DISTINCT queue_id FROM dedup_keys WHERE expires_at <= t)
         ORDER BY id
    LOOP
        DELETE FROM dedup_keys d
         WHERE d.queue_id = q.id
           AND d.dedup_key = ANY (ARRAY(
               SELECT dedup_key FROM dedup_keys
                WHERE queue_id = q.id AND expires_at <= t
                LIMIT 10000
                  FOR UPDATE SKIP LOCKED));
    END LOOP;

    DELETE FROM wake_interest WHERE until < t - interval '1 minute';

    RETURN total;
END
$$;
