-- Statements a Citus cluster can run, on plain Postgres as well (issue #19).
--
-- `sluice migrate --citus` distributes the queue tables by queue_id
-- (pgqueue/citus/distribute.sql). Citus then refuses a few forms the earlier
-- migrations used; this migration replaces them with forms both planners
-- accept, so there is one code path:
--
-- - a VOLATILE function in an UPDATE of a distributed table: receive drew
--   each receipt with gen_random_uuid() in the UPDATE. It now draws one
--   random uuid per call and derives each message's receipt from it and the
--   message's sequence (md5, immutable): receipts stay unguessable and
--   distinct per message and per lease.
-- - a STABLE function (now()) in ON CONFLICT ... WHERE: send with a dedup
--   key compares against the time read once into a variable (a parameter
--   to the planner).
-- - a LANGUAGE sql function with parameters writing a distributed table
--   (count_dlq_moves): now plpgsql.
-- - replacing a function that a BEGIN ATOMIC wrapper calls (receive()
--   calls account_receive) fails on Citus; see the note below.
-- - sweep() locked rows across every shard with one FOR UPDATE, picked
--   them by ctid and walked queues with a LATERAL LIMIT over a reference
--   table. It now finds the queues with work using plain reads, then works
--   queue by queue with statements keyed by (queue_id, sequence), each
--   touching one queue (one shard), still with FOR UPDATE SKIP LOCKED.
-- - queue_stats joined queues LATERAL to per-queue counts ("complex joins"
--   for Citus). It now joins queues to counts grouped by queue_id. A filter
--   on queue_id reaches the grouped counts (the planner pushes it down), so
--   the Go API asks for one queue's stats by its id.

-- On Citus, where every function is a distributed object, replacing a
-- function that a BEGIN ATOMIC wrapper depends on fails ("circular
-- dependencies between distributed objects"): the wrapper is dropped first
-- and created again after, as it was. Later migrations do the same.
DROP FUNCTION receive(text, integer, integer);

CREATE OR REPLACE FUNCTION account_receive(p_account text, p_queue text, p_max_messages integer DEFAULT 1, p_visibility_timeout_seconds integer DEFAULT NULL::integer) RETURNS SETOF received_message
    LANGUAGE plpgsql
    SET search_path FROM CURRENT
    AS $$
DECLARE
    q queues;
    vt integer;
    -- One draw per call; each message's receipt is derived from it and the
    -- message's sequence, so the UPDATE calls no volatile function.
    lease uuid := gen_random_uuid();
BEGIN
    SELECT * INTO q FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_max_messages IS NULL OR p_max_messages < 1 OR p_max_messages > 1000 THEN
        PERFORM out_of_range('max_messages', p_max_messages, 1, 1000);
    END IF;
    vt := coalesce(p_visibility_timeout_seconds, q.visibility_timeout_seconds);
    IF vt < 0 OR vt > 43200 THEN
        PERFORM out_of_range('visibility_timeout_seconds', vt, 0, 43200);
    END IF;
    -- The same claim as in 008. Parked group members have visible_at =
    -- 'infinity', beyond the index range this walks.
    RETURN QUERY
    WITH leased AS (
        UPDATE messages m
           SET visible_at = now() + make_interval(secs => vt),
               receive_count = m.receive_count + 1,
               final_lease = (m.receive_count + 1 >= q.max_receive_count),
               receipt = md5(lease::text || m.sequence::text)::uuid
         WHERE m.queue_id = q.id
           AND m.sequence = ANY (ARRAY(
               SELECT c.sequence
                 FROM messages c
                WHERE c.queue_id = q.id
                  AND c.visible_at <= now()
                  AND c.receive_count < q.max_receive_count
                  AND (c.expires_at IS NULL OR c.expires_at > now())
                ORDER BY c.visible_at, c.sequence
                LIMIT p_max_messages
                  FOR UPDATE SKIP LOCKED))
        RETURNING m.sequence, m.body, m.headers, m.receive_count, m.created_at, m.visible_at, m.receipt, m.group_key
    )
    SELECT l.sequence, l.body, l.headers, l.receive_count, l.created_at, l.visible_at, l.receipt, l.group_key
      FROM leased l
     ORDER BY l.sequence;
END
$$;

CREATE FUNCTION receive(queue text, max_messages integer DEFAULT 1, visibility_timeout_seconds integer DEFAULT NULL)
RETURNS SETOF received_message
LANGUAGE sql
BEGIN ATOMIC
    SELECT * FROM account_receive('000000000001', receive.queue, receive.max_messages,
                                  receive.visibility_timeout_seconds);
END;

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
        seq := nextval('message_sequence');
        INSERT INTO dedup_keys AS d (queue_id, dedup_key, sequence, expires_at)
        VALUES (q.id, p_dedup_key, seq, now() + make_interval(secs => q.dedup_window_seconds))
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

CREATE OR REPLACE FUNCTION count_dlq_moves(p_queue_ids bigint[]) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO queue_minutes AS qm (queue_id, minute, dlq_moves)
    SELECT queue_id, current_minute(), count(*)
      FROM unnest(p_queue_ids) AS queue_id
     GROUP BY queue_id
     ORDER BY queue_id
    ON CONFLICT (queue_id, minute) DO UPDATE SET dlq_moves = qm.dlq_moves + excluded.dlq_moves;
END
$$;

-- sweep() as in 009, queue by queue. The queues with work are found with
-- plain reads (no locks; on Citus one read per shard, in parallel); each
-- queue's rows are then locked with FOR UPDATE SKIP LOCKED and deleted by
-- (queue_id, sequence) in statements that touch that queue alone.
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
                INSERT INTO dead_letters (queue_id, sequence, body, headers, receive_count, created_at, expires_at, reason, last_error)
                SELECT queue_id, sequence, body, headers, receive_count, created_at, expires_at, 'max_receive_count', last_error
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

-- queue_stats as in 008, with the per-queue counts grouped by queue_id and
-- joined to queues instead of computed LATERAL per queue row. The counts
-- carry their queue's account as well, so a filter on the account (or on
-- queue_id) reaches them: one account's stats read that account's rows.
CREATE OR REPLACE VIEW queue_stats AS
SELECT q.account,
       q.name AS queue,
       coalesce(s.ready, 0) AS ready,
       coalesce(s.delayed, 0) AS delayed,
       coalesce(s.inflight, 0) AS inflight,
       coalesce(d.dlq, 0) AS dlq,
       coalesce(s.oldest_ready_age_seconds, 0)::double precision AS oldest_ready_age_seconds,
       coalesce(s.total, 0) AS total,
       q.id AS queue_id,
       q.max_receive_count,
       q.visibility_timeout_seconds,
       coalesce(s.grouped_waiting, 0) AS grouped_waiting,
       coalesce(g.groups, 0) AS groups,
       coalesce(s.groups_inflight, 0) AS groups_inflight,
       coalesce(s.groups_blocked, 0) AS groups_blocked
  FROM queues q
  LEFT JOIN (
        SELECT m.queue_id, mq.account,
               count(*) FILTER (WHERE m.visible_at <= now() AND m.receive_count < mq.max_receive_count
                                  AND (m.expires_at IS NULL OR m.expires_at > now())) AS ready,
               count(*) FILTER (WHERE m.visible_at > now() AND m.visible_at < 'infinity' AND m.receive_count = 0) AS delayed,
               count(*) FILTER (WHERE m.visible_at > now() AND m.receive_count > 0) AS inflight,
               extract(epoch FROM now() - min(m.created_at) FILTER (
                   WHERE m.visible_at <= now() AND m.receive_count < mq.max_receive_count
                     AND (m.expires_at IS NULL OR m.expires_at > now())))::double precision AS oldest_ready_age_seconds,
               count(*) AS total,
               count(*) FILTER (WHERE m.visible_at = 'infinity') AS grouped_waiting,
               count(*) FILTER (WHERE m.group_key IS NOT NULL AND m.visible_at > now() AND m.visible_at < 'infinity'
                                  AND m.receive_count > 0) AS groups_inflight,
               -- message_groups has one row per (queue_id, group_key), so the
               -- join adds no rows.
               count(*) FILTER (WHERE m.group_key IS NOT NULL AND m.visible_at < 'infinity'
                                  AND (m.receive_count > 1 OR (m.receive_count > 0 AND m.visible_at <= now())
                                       OR m.last_error IS NOT NULL)
                                  AND mg.size > 1) AS groups_blocked
          FROM messages m
          JOIN queues mq ON mq.id = m.queue_id
          LEFT JOIN message_groups mg ON mg.queue_id = m.queue_id AND mg.group_key = m.group_key
         GROUP BY m.queue_id, mq.account) s ON s.queue_id = q.id AND s.account = q.account
  LEFT JOIN (SELECT dl.queue_id, dq.account, count(*) AS dlq
               FROM dead_letters dl JOIN queues dq ON dq.id = dl.queue_id
              GROUP BY dl.queue_id, dq.account) d ON d.queue_id = q.id AND d.account = q.account
  LEFT JOIN (SELECT mg.queue_id, gq.account, count(*) AS groups
               FROM message_groups mg JOIN queues gq ON gq.id = mg.queue_id
              GROUP BY mg.queue_id, gq.account) g ON g.queue_id = q.id AND g.account = q.account;
