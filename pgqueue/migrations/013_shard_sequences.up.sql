-- Every sequence of a queue is drawn on the node that holds the queue's
-- rows, and nothing else draws one (issue #19).
--
-- A message's sequence grows with send time within its queue. It comes from
-- message_sequence. On plain Postgres there is one such sequence and
-- nothing changes: messages.sequence defaults to nextval(...) as before,
-- and the triggers below never fire for messages (their WHEN is false).
--
-- On Citus every node has its own message_sequence, each drawing from its
-- own range (2^48 × the node's group id upwards). A default is evaluated
-- where the statement is planned (the coordinator), a trigger runs on the
-- shard (the worker), so a queue's sequences came from two ranges: a
-- grouped message, whose sequence group_enter drew on the worker, sorted
-- after every ungrouped message of its queue, and a function delegated to
-- the worker would draw from the worker's range too. So on Citus
-- (pgqueue/citus/distribute.sql) messages.sequence defaults to -1, a
-- marker, and a BEFORE INSERT trigger draws the sequence for a row that
-- carries it, on the shard's node, whoever sent the statement:
--
-- - draw_sequence() is that trigger, on messages and on dedup_keys, WHEN
--   (NEW.sequence < 0); the only function that calls nextval.
-- - group_enter no longer draws the sequence itself: it sets the marker
--   under its group's lock and messages_sequence_draw, which fires after
--   it (BEFORE triggers fire in name order, and a WHEN sees the row as the
--   earlier triggers left it), draws it, so within a group sequence order
--   is still the order in which the sends took the lock.
-- - account_send with a dedup key drew a sequence before inserting the key
--   and the message with it. It now inserts the key with the marker,
--   dedup_keys_sequence_draw draws the sequence on the shard's node, and
--   the message is inserted with the sequence read back (ON CONFLICT's
--   excluded row carries what a BEFORE INSERT trigger set).
-- - Redrive inserts a dead letter with its old sequence; a grouped one
--   takes a new sequence in group_enter, hence drawn the same way. For
--   that the dead letter must keep its group: account_fail and sweep() now
--   copy group_key into dead_letters themselves. They relied on
--   group_leave (AFTER DELETE on messages) setting it on the dead letter,
--   which works only when the dead letter is inserted before that trigger
--   runs: on Postgres, in the same statement (account_fail's CTEs), but
--   not when the insert is a later statement (sweep() since 010, and on
--   Citus, which runs each modifying CTE as a statement of its own, so the
--   trigger ran on the shard before the dead letter existed). A grouped
--   dead letter then lost its group and a redrive put it back beside its
--   group's head with its old sequence.

-- Draws a message sequence for a row that asks for one (sequence < 0): a
-- BEFORE INSERT trigger on messages and dedup_keys. It runs where the row
-- is stored (on Citus, the worker holding the queue's shard), so every
-- sequence of a queue comes from that node's message_sequence.
CREATE FUNCTION draw_sequence() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    NEW.sequence := nextval('message_sequence');
    RETURN NEW;
END
$$;

-- messages_sequence_draw is named to fire after messages_group_enter
-- (BEFORE triggers fire in name order), which sets the marker under its
-- group's lock. The triggers are created in a DO block: on a schema already
-- distributed on Citus, Citus sends a CREATE TRIGGER on a distributed table
-- to the shards as the text of the statement that ran it, and a migration
-- file is one text of many statements, which the workers refuse ("cannot
-- insert multiple commands into a prepared statement").
DO $$
BEGIN
    CREATE TRIGGER messages_sequence_draw BEFORE INSERT ON messages
        FOR EACH ROW WHEN (NEW.sequence < 0) EXECUTE FUNCTION draw_sequence();
    CREATE TRIGGER dedup_keys_sequence_draw BEFORE INSERT ON dedup_keys
        FOR EACH ROW WHEN (NEW.sequence < 0) EXECUTE FUNCTION draw_sequence();
END
$$;

-- A grouped message joins its group: the first message of an empty group is
-- its head; any other is parked until the messages before it are gone.
-- The message takes its sequence only now, under the group's row lock, so
-- that within a group sequence order is the order in which the sends took
-- the lock (and committed): the head always has the group's lowest
-- sequence, and a redriven dead letter rejoins at the end of its group.
-- As in 008, except that the sequence is drawn by messages_sequence_draw,
-- which fires after this trigger: this one sets the marker (-1).
CREATE OR REPLACE FUNCTION group_enter() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    n bigint;
BEGIN
    IF length(NEW.group_key) < 1 OR length(NEW.group_key) > 128 THEN
        PERFORM out_of_range('group length', length(NEW.group_key), 1, 128);
    END IF;
    INSERT INTO message_groups AS g (queue_id, group_key, size)
    VALUES (NEW.queue_id, NEW.group_key, 1)
    ON CONFLICT (queue_id, group_key) DO UPDATE SET size = g.size + 1
    RETURNING g.size INTO n;
    NEW.sequence := -1;
    IF n > 1 THEN
        NEW.ready_at := NEW.visible_at;
        NEW.visible_at := 'infinity';
    END IF;
    RETURN NEW;
END
$$;

-- send() calls account_send in a BEGIN ATOMIC body: dropped and created
-- again around the replacement, as it was (see 010).
DROP FUNCTION send(text, jsonb, integer, jsonb, integer, text, text);

-- Sends one message (as in 010); with a dedup key, the key's sequence is
-- drawn by dedup_keys_sequence_draw instead of nextval here.
CREATE OR REPLACE FUNCTION account_send(p_account text, p_queue text, p_body jsonb, p_delay_seconds integer DEFAULT 0, p_headers jsonb DEFAULT NULL::jsonb, p_expires_in_seconds integer DEFAULT NULL::integer, p_dedup_key text DEFAULT NULL::text, p_group text DEFAULT NULL::text) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path FROM CURRENT
    AS $$
DECLARE
    q queues;
    seq bigint;
    size bigint;
    got bigint;
    delay integer;
    -- Read once: Citus takes a parameter, not now(), in ON CONFLICT ... WHERE.
    t timestamptz := now();
BEGIN
    SELECT * INTO q FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_body IS NULL THEN
        PERFORM raise_error('SQ005', 'invalid body NULL: use a JSON value');
    END IF;
    IF q.fifo AND p_group IS NULL THEN PERFORM fifo_needs_group(p_queue); END IF;
    size := octet_length(p_body::text);
    IF size > q.max_message_bytes THEN PERFORM too_large(p_queue, size, q.max_message_bytes); END IF;
    IF p_delay_seconds IS NOT NULL AND (p_delay_seconds < 0 OR p_delay_seconds > 43200) THEN
        PERFORM out_of_range('delay_seconds', p_delay_seconds, 0, 43200);
    END IF;
    IF p_expires_in_seconds IS NOT NULL AND (p_expires_in_seconds < 1 OR p_expires_in_seconds > 1209600) THEN
        PERFORM out_of_range('expires_in_seconds', p_expires_in_seconds, 1, 1209600);
    END IF;
    IF p_headers IS NOT NULL AND jsonb_typeof(p_headers) <> 'object' THEN
        PERFORM raise_error('SQ005', 'invalid headers: use a JSON object or NULL');
    END IF;
    delay := greatest(coalesce(p_delay_seconds, 0), q.delay_seconds);

    IF p_dedup_key IS NOT NULL THEN
        IF length(p_dedup_key) < 1 OR length(p_dedup_key) > 128 THEN
            PERFORM out_of_range('dedup_key length', length(p_dedup_key), 1, 128);
        END IF;
        -- The key is taken with the message's sequence, drawn by
        -- dedup_keys_sequence_draw on the node holding the queue's shard
        -- (-1 asks for one), and read back; a send that finds the key
        -- taken returns the sequence stored with it.
        INSERT INTO dedup_keys AS d (queue_id, dedup_key, sequence, expires_at)
        VALUES (q.id, p_dedup_key, -1, now() + make_interval(secs => q.dedup_window_seconds))
        ON CONFLICT (queue_id, dedup_key) DO UPDATE
            SET sequence = excluded.sequence, expires_at = excluded.expires_at
            WHERE d.expires_at <= t
        RETURNING d.sequence INTO seq;
        IF NOT FOUND THEN
            SELECT d.sequence INTO seq FROM dedup_keys d WHERE d.queue_id = q.id AND d.dedup_key = p_dedup_key;
            RETURN seq;
        END IF;
        INSERT INTO messages (queue_id, sequence, visible_at, expires_at, body, headers, group_key)
        VALUES (q.id, seq, now() + make_interval(secs => delay),
                now() + make_interval(secs => p_expires_in_seconds), p_body, p_headers, p_group)
        RETURNING sequence INTO got;
        IF got <> seq THEN
            -- A grouped message took a new sequence under its group's lock.
            UPDATE dedup_keys SET sequence = got WHERE queue_id = q.id AND dedup_key = p_dedup_key;
            seq := got;
        END IF;
    ELSE
        INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key)
        VALUES (q.id, now() + make_interval(secs => delay),
                now() + make_interval(secs => p_expires_in_seconds), p_body, p_headers, p_group)
        RETURNING sequence INTO seq;
    END IF;

    IF delay = 0 THEN
        PERFORM wake(q.id, p_account, p_queue);
    END IF;
    RETURN seq;
END
$$;

CREATE FUNCTION send(queue text, body jsonb, delay_seconds integer DEFAULT 0, headers jsonb DEFAULT NULL,
                     expires_in_seconds integer DEFAULT NULL, dedup_key text DEFAULT NULL,
                     group_key text DEFAULT NULL) RETURNS bigint
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_send('000000000001', send.queue, send.body, send.delay_seconds, send.headers,
                        send.expires_in_seconds, send.dedup_key, send.group_key);
END;

-- As in 009, and the dead letters keep their group (see the top).
CREATE OR REPLACE FUNCTION account_fail(p_account text, p_queue text, p_sequences bigint[], p_receipts uuid[] DEFAULT NULL,
                             p_reasons text[] DEFAULT NULL, p_errors text[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
    dlq queues;
BEGIN
    qid := queue_id(p_account, p_queue);
    SELECT d.* INTO dlq FROM queues q JOIN queues d ON d.id = q.dead_letter_queue_id WHERE q.id = qid;
    IF FOUND THEN
        -- The queue has a dead_letter_queue: the failed messages become new
        -- messages of that queue, ready at once.
        RETURN QUERY
        WITH a AS (
            SELECT * FROM unnest(p_sequences, p_receipts, p_reasons, p_errors) AS a(sequence, receipt, reason, error)
        ), moved AS (
            DELETE FROM messages m
             USING a
             WHERE m.queue_id = qid AND m.sequence = a.sequence
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
            SELECT qid, current_minute(), count(*) FROM fwd HAVING count(*) > 0
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
         WHERE m.queue_id = qid AND m.sequence = a.sequence
           AND (a.receipt IS NULL OR m.receipt = a.receipt)
        RETURNING m.*, coalesce(a.reason, 'permanent_failure') AS reason, coalesce(a.error, m.last_error) AS error
    ), ins AS (
        INSERT INTO dead_letters (queue_id, sequence, body, headers, receive_count, created_at, expires_at, reason, last_error,
                                  group_key)
        SELECT qid, moved.sequence, moved.body, moved.headers, moved.receive_count, moved.created_at, moved.expires_at,
               moved.reason, moved.error, moved.group_key
          FROM moved
        ON CONFLICT (queue_id, sequence) DO NOTHING
        RETURNING 1
    ), counted AS (
        INSERT INTO queue_minutes AS qm (queue_id, minute, dlq_moves)
        SELECT qid, current_minute(), count(*) FROM ins HAVING count(*) > 0
        ON CONFLICT (queue_id, minute) DO UPDATE SET dlq_moves = qm.dlq_moves + excluded.dlq_moves
    )
    SELECT moved.sequence FROM moved;
END
$$;

-- As in 010, and the dead letters keep their group (see the top).
CREATE OR REPLACE FUNCTION sweep() RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    t timestamptz := now();
    total bigint := 0;
    n bigint;
    moved_to_dlq bigint[] := '{}';
    forwarded_to bigint[] := '{}';
    moved messages[];
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
        WITH gone AS (
            DELETE FROM messages m
             WHERE m.queue_id = q.id
               AND m.sequence = ANY (ARRAY(
                   SELECT sequence FROM messages
                    WHERE queue_id = q.id AND final_lease AND visible_at <= t
                    ORDER BY visible_at
                    LIMIT 10000
                      FOR UPDATE SKIP LOCKED))
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
        DELETE FROM messages m
         WHERE m.queue_id = q.id
           AND m.sequence = ANY (ARRAY(
               SELECT sequence FROM messages
                WHERE queue_id = q.id AND expires_at IS NOT NULL AND expires_at <= t
                ORDER BY expires_at
                LIMIT 10000
                  FOR UPDATE SKIP LOCKED));
        GET DIAGNOSTICS n = ROW_COUNT;
        total := total + n;
    END LOOP;

    -- Retention. Sequences grow with time, so the oldest messages of a queue
    -- are at the head of its primary key: only queues whose head is past
    -- retention are visited, and each visit reads at most 1,000 rows.
    FOR q IN SELECT * FROM queues ORDER BY id LOOP
        CONTINUE WHEN NOT coalesce((SELECT f.created_at FROM messages f WHERE f.queue_id = q.id ORDER BY f.sequence LIMIT 1)
                                   < t - make_interval(secs => q.retention_seconds), false);
        DELETE FROM messages m
         WHERE m.queue_id = q.id
           AND m.sequence = ANY (ARRAY(
               SELECT h.sequence
                 FROM (SELECT o.sequence, o.created_at FROM messages o
                        WHERE o.queue_id = q.id
                        ORDER BY o.sequence
                        LIMIT 1000
                          FOR UPDATE SKIP LOCKED) h
                WHERE h.created_at < t - make_interval(secs => q.retention_seconds)));
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
