-- Back to the forms of 003, 008 and 009.

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
    -- The same claim as in 001. Parked group members have visible_at =
    -- 'infinity', beyond the index range this walks.
    RETURN QUERY
    WITH leased AS (
        UPDATE messages m
           SET visible_at = now() + make_interval(secs => vt),
               receive_count = m.receive_count + 1,
               final_lease = (m.receive_count + 1 >= q.max_receive_count),
               receipt = gen_random_uuid()
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
            WHERE d.expires_at <= now()
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
    LANGUAGE sql
    SET search_path FROM CURRENT
    AS $$
    INSERT INTO queue_minutes AS qm (queue_id, minute, dlq_moves)
    SELECT queue_id, current_minute(), count(*)
      FROM unnest(p_queue_ids) AS queue_id
     GROUP BY queue_id
     ORDER BY queue_id
    ON CONFLICT (queue_id, minute) DO UPDATE SET dlq_moves = qm.dlq_moves + excluded.dlq_moves
$$;

CREATE OR REPLACE FUNCTION sweep() RETURNS bigint
    LANGUAGE plpgsql
    SET search_path FROM CURRENT
    AS $$
DECLARE
    total bigint := 0;
    n bigint;
    moved_to_dlq bigint[];
    forwarded_to bigint[];
    w record;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('sluice.sweep'), hashtext(current_schema())) THEN
        RETURN 0;
    END IF;

    -- Rows are picked by ctid = ANY(ARRAY(... FOR UPDATE SKIP LOCKED)):
    -- locked rows keep their ctid, and the plan is a TID scan whatever the
    -- table's size.
    WITH moved AS (
        DELETE FROM messages m
         WHERE m.ctid = ANY (ARRAY(
               SELECT ctid FROM messages
                WHERE final_lease AND visible_at <= now()
                ORDER BY visible_at
                LIMIT 10000
                  FOR UPDATE SKIP LOCKED))
        RETURNING m.*
    ), routed AS (
        SELECT mv.*, q.dead_letter_queue_id AS dlq_id, q.name AS queue_name
          FROM moved mv JOIN queues q ON q.id = mv.queue_id
    ), ins AS (
        INSERT INTO dead_letters (queue_id, sequence, body, headers, receive_count, created_at, expires_at, reason, last_error)
        SELECT queue_id, sequence, body, headers, receive_count, created_at, expires_at, 'max_receive_count', last_error
          FROM routed
         WHERE dlq_id IS NULL
        ON CONFLICT (queue_id, sequence) DO NOTHING
        RETURNING queue_id
    ), fwd AS (
        -- Queues with a dead_letter_queue: the dead letter becomes a new
        -- message of that queue, ready at once.
        INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key)
        SELECT dlq_id, now(), expires_at, body,
               dead_letter_headers(headers, queue_name, sequence, 'max_receive_count', last_error, receive_count),
               group_key
          FROM routed
         WHERE dlq_id IS NOT NULL
         ORDER BY dlq_id, sequence
        RETURNING queue_id
    )
    SELECT (SELECT array_agg(queue_id) FROM (SELECT queue_id FROM ins
                                              UNION ALL SELECT queue_id FROM routed WHERE dlq_id IS NOT NULL) x),
           (SELECT array_agg(DISTINCT queue_id) FROM fwd)
      INTO moved_to_dlq, forwarded_to;
    FOR w IN SELECT q.id, q.account, q.name FROM queues q WHERE q.id = ANY (forwarded_to) LOOP
        PERFORM wake(w.id, w.account, w.name);
    END LOOP;
    n := coalesce(cardinality(moved_to_dlq), 0);
    IF n > 0 THEN
        PERFORM count_dlq_moves(moved_to_dlq);
    END IF;
    total := total + n;

    DELETE FROM messages m
     WHERE m.ctid = ANY (ARRAY(
           SELECT ctid FROM messages
            WHERE expires_at IS NOT NULL AND expires_at <= now()
            ORDER BY expires_at
            LIMIT 10000
              FOR UPDATE SKIP LOCKED));
    GET DIAGNOSTICS n = ROW_COUNT;
    total := total + n;

    -- Retention. Sequences grow with time, so the oldest messages of a queue
    -- are at the head of its primary key: only queues whose head is past
    -- retention are visited, and each visit reads at most 1,000 rows.
    DELETE FROM messages m
     WHERE m.ctid = ANY (ARRAY(
           SELECT h.ctid
             FROM queues q
            CROSS JOIN LATERAL (
                  SELECT o.ctid, o.created_at FROM messages o
                   WHERE o.queue_id = q.id
                   ORDER BY o.sequence
                   LIMIT 1000
                     FOR UPDATE SKIP LOCKED) h
            WHERE h.created_at < now() - make_interval(secs => q.retention_seconds)
              AND (SELECT f.created_at FROM messages f WHERE f.queue_id = q.id ORDER BY f.sequence LIMIT 1)
                  < now() - make_interval(secs => q.retention_seconds)));
    GET DIAGNOSTICS n = ROW_COUNT;
    total := total + n;

    DELETE FROM dead_letters d
     WHERE d.ctid = ANY (ARRAY(
           SELECT h.ctid
             FROM queues q
            CROSS JOIN LATERAL (
                  SELECT o.ctid FROM dead_letters o
                   WHERE o.queue_id = q.id
                     AND o.failed_at < now() - make_interval(secs => q.retention_seconds)
                   ORDER BY o.failed_at
                   LIMIT 1000
                     FOR UPDATE SKIP LOCKED) h));

    DELETE FROM dedup_keys d
     WHERE d.ctid = ANY (ARRAY(
           SELECT ctid FROM dedup_keys
            WHERE expires_at <= now()
            LIMIT 10000
              FOR UPDATE SKIP LOCKED));

    DELETE FROM wake_interest WHERE until < now() - interval '1 minute';

    RETURN total;
END
$$;

DROP VIEW queue_stats;
CREATE VIEW queue_stats AS
 SELECT q.account,
    q.name AS queue,
    COALESCE(s.ready, (0)::bigint) AS ready,
    COALESCE(s.delayed, (0)::bigint) AS delayed,
    COALESCE(s.inflight, (0)::bigint) AS inflight,
    d.dlq,
    COALESCE(s.oldest_ready_age_seconds, (0)::double precision) AS oldest_ready_age_seconds,
    COALESCE(s.total, (0)::bigint) AS total,
    q.id AS queue_id,
    q.max_receive_count,
    q.visibility_timeout_seconds,
    COALESCE(s.grouped_waiting, (0)::bigint) AS grouped_waiting,
    g.groups,
    COALESCE(s.groups_inflight, (0)::bigint) AS groups_inflight,
    COALESCE(s.groups_blocked, (0)::bigint) AS groups_blocked
   FROM (((queues q
     CROSS JOIN LATERAL ( SELECT count(*) FILTER (WHERE ((m.visible_at <= now()) AND (m.receive_count < q.max_receive_count) AND ((m.expires_at IS NULL) OR (m.expires_at > now())))) AS ready,
            count(*) FILTER (WHERE ((m.visible_at > now()) AND (m.visible_at < 'infinity'::timestamp with time zone) AND (m.receive_count = 0))) AS delayed,
            count(*) FILTER (WHERE ((m.visible_at > now()) AND (m.receive_count > 0))) AS inflight,
            (EXTRACT(epoch FROM (now() - min(m.created_at) FILTER (WHERE ((m.visible_at <= now()) AND (m.receive_count < q.max_receive_count) AND ((m.expires_at IS NULL) OR (m.expires_at > now())))))))::double precision AS oldest_ready_age_seconds,
            count(*) AS total,
            count(*) FILTER (WHERE (m.visible_at = 'infinity'::timestamp with time zone)) AS grouped_waiting,
            count(*) FILTER (WHERE ((m.group_key IS NOT NULL) AND (m.visible_at > now()) AND (m.visible_at < 'infinity'::timestamp with time zone) AND (m.receive_count > 0))) AS groups_inflight,
            count(*) FILTER (WHERE ((m.group_key IS NOT NULL) AND (m.visible_at < 'infinity'::timestamp with time zone) AND ((m.receive_count > 1) OR ((m.receive_count > 0) AND (m.visible_at <= now())) OR (m.last_error IS NOT NULL)) AND (EXISTS ( SELECT 1
                   FROM message_groups mg
                  WHERE ((mg.queue_id = q.id) AND (mg.group_key = m.group_key) AND (mg.size > 1)))))) AS groups_blocked
           FROM messages m
          WHERE (m.queue_id = q.id)) s)
     CROSS JOIN LATERAL ( SELECT count(*) AS dlq
           FROM dead_letters dl
          WHERE (dl.queue_id = q.id)) d)
     CROSS JOIN LATERAL ( SELECT count(*) AS groups
           FROM message_groups mg
          WHERE (mg.queue_id = q.id)) g);
