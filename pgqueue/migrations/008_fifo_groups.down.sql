-- Undo 008: ordered groups. Grouped messages become ordinary messages
-- (parked ones are made visible at their own time).

DROP TRIGGER messages_group_enter ON messages;
DROP TRIGGER messages_group_leave ON messages;
DROP TRIGGER messages_group_keep_parked ON messages;
DROP FUNCTION group_enter();
DROP FUNCTION group_leave();
DROP FUNCTION group_keep_parked();
UPDATE messages SET visible_at = coalesce(ready_at, now()) WHERE visible_at = 'infinity';

DROP FUNCTION send(text, jsonb, integer, jsonb, integer, text, text);
DROP FUNCTION send_batch(text, jsonb[], integer, text);
DROP FUNCTION account_send(text, text, jsonb, integer, jsonb, integer, text, text);
DROP FUNCTION account_send_batch(text, text, jsonb[], integer, jsonb[], integer[], integer[], text[], text[]);
DROP FUNCTION fifo_needs_group(text);
DROP FUNCTION receive(text, integer, integer);
DROP FUNCTION peek(text, integer);
DROP FUNCTION receive_delete(text, integer);
DROP VIEW queue_stats;
DROP FUNCTION receive_dlq(text, integer);
ALTER TYPE dead_letter DROP ATTRIBUTE group_key;
CREATE OR REPLACE FUNCTION account_receive_dlq(p_account text, p_queue text, p_max_messages integer DEFAULT 10)
RETURNS SETOF dead_letter
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
BEGIN
    qid := queue_id(p_account, p_queue);
    IF p_max_messages IS NULL OR p_max_messages < 1 OR p_max_messages > 1000 THEN
        PERFORM out_of_range('max_messages', p_max_messages, 1, 1000);
    END IF;
    RETURN QUERY
    SELECT d.sequence, d.body, d.headers, d.receive_count, d.created_at, d.failed_at, d.reason, d.last_error
      FROM dead_letters d
     WHERE d.queue_id = qid
     ORDER BY d.failed_at, d.sequence
     LIMIT p_max_messages;
END
$$;

CREATE OR REPLACE FUNCTION account_receive_dlq_after(p_account text, p_queue text, p_after bigint, p_max_messages integer)
RETURNS SETOF dead_letter
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
BEGIN
    qid := queue_id(p_account, p_queue);
    PERFORM check_page(p_after, p_max_messages);
    RETURN QUERY
    SELECT d.sequence, d.body, d.headers, d.receive_count, d.created_at, d.failed_at, d.reason, d.last_error
      FROM dead_letters d
     WHERE d.queue_id = qid AND d.sequence > p_after
     ORDER BY d.sequence
     LIMIT p_max_messages;
END
$$;

CREATE FUNCTION receive_dlq(queue text, max_messages integer DEFAULT 10) RETURNS SETOF dead_letter
LANGUAGE sql
BEGIN ATOMIC
    SELECT * FROM account_receive_dlq('000000000001', receive_dlq.queue, receive_dlq.max_messages);
END;


CREATE FUNCTION account_send(p_account text, p_queue text, p_body jsonb, p_delay_seconds integer DEFAULT 0,
                             p_headers jsonb DEFAULT NULL, p_expires_in_seconds integer DEFAULT NULL,
                             p_dedup_key text DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    q queues;
    seq bigint;
    size bigint;
    delay integer;
BEGIN
    SELECT * INTO q FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_body IS NULL THEN
        PERFORM raise_error('SQ005', 'invalid body NULL: use a JSON value');
    END IF;
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
        INSERT INTO messages (queue_id, sequence, visible_at, expires_at, body, headers)
        VALUES (q.id, seq, now() + make_interval(secs => delay),
                now() + make_interval(secs => p_expires_in_seconds), p_body, p_headers);
    ELSE
        INSERT INTO messages (queue_id, visible_at, expires_at, body, headers)
        VALUES (q.id, now() + make_interval(secs => delay),
                now() + make_interval(secs => p_expires_in_seconds), p_body, p_headers)
        RETURNING sequence INTO seq;
    END IF;

    IF delay = 0 THEN
        PERFORM wake(q.id, p_account, p_queue);
    END IF;
    RETURN seq;
END
$$;

CREATE FUNCTION account_send_batch(p_account text, p_queue text, p_bodies jsonb[], p_delay_seconds integer DEFAULT 0,
                                   p_headers jsonb[] DEFAULT NULL, p_delays integer[] DEFAULT NULL,
                                   p_expires_in integer[] DEFAULT NULL, p_dedup_keys text[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    q queues;
    n integer := coalesce(cardinality(p_bodies), 0);
    bad record;
    i integer;
    visible timestamptz;
BEGIN
    SELECT * INTO q FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF n = 0 THEN
        RETURN;
    END IF;
    IF n > 1000 THEN PERFORM out_of_range('batch size', n, 1, 1000); END IF;
    IF p_delay_seconds IS NOT NULL AND (p_delay_seconds < 0 OR p_delay_seconds > 43200) THEN
        PERFORM out_of_range('delay_seconds', p_delay_seconds, 0, 43200);
    END IF;

    IF p_headers IS NULL AND p_delays IS NULL AND p_expires_in IS NULL AND p_dedup_keys IS NULL THEN
        -- Common case: bodies only. One pass checks sizes (calling
        -- bad_body only to raise) and inserts.
        visible := now() + make_interval(secs => greatest(coalesce(p_delay_seconds, 0), q.delay_seconds));
        RETURN QUERY
        INSERT INTO messages (queue_id, visible_at, body)
        SELECT q.id, visible,
               CASE WHEN b.body IS NULL OR octet_length(b.body::text) > q.max_message_bytes
                    THEN bad_body(p_queue, b.body, b.ord, q.max_message_bytes)
                    ELSE b.body END
          FROM unnest(p_bodies) WITH ORDINALITY AS b(body, ord)
        RETURNING sequence;
        IF visible <= now() THEN
            PERFORM wake(q.id, p_account, p_queue);
        END IF;
        RETURN;
    END IF;

    SELECT b.ord, b.body, octet_length(b.body::text) AS size INTO bad
      FROM unnest(p_bodies) WITH ORDINALITY AS b(body, ord)
     WHERE b.body IS NULL OR octet_length(b.body::text) > q.max_message_bytes
     ORDER BY b.ord LIMIT 1;
    IF FOUND THEN
        IF bad.body IS NULL THEN
            PERFORM raise_error('SQ005', format('invalid body NULL at batch index %s: use a JSON value', bad.ord - 1));
        END IF;
        PERFORM too_large(p_queue, bad.size, q.max_message_bytes);
    END IF;
    IF p_delays IS NOT NULL THEN
        SELECT x INTO bad FROM unnest(p_delays) x WHERE x < 0 OR x > 43200 LIMIT 1;
        IF FOUND THEN PERFORM out_of_range('delay_seconds', bad.x, 0, 43200); END IF;
    END IF;
    IF p_expires_in IS NOT NULL THEN
        SELECT x INTO bad FROM unnest(p_expires_in) x WHERE x < 1 OR x > 1209600 LIMIT 1;
        IF FOUND THEN PERFORM out_of_range('expires_in_seconds', bad.x, 1, 1209600); END IF;
    END IF;
    IF p_headers IS NOT NULL THEN
        PERFORM 1 FROM unnest(p_headers) h WHERE h IS NOT NULL AND jsonb_typeof(h) <> 'object';
        IF FOUND THEN PERFORM raise_error('SQ005', 'invalid headers: use a JSON object or NULL'); END IF;
    END IF;

    IF p_dedup_keys IS NOT NULL AND EXISTS (SELECT 1 FROM unnest(p_dedup_keys) k WHERE k IS NOT NULL) THEN
        -- Rare path: deduplicated batches go message by message, in order,
        -- so a key repeated inside the batch also returns the first sequence.
        FOR i IN 1..n LOOP
            RETURN NEXT account_send(p_account, p_queue, p_bodies[i],
                                     coalesce(p_delays[i], p_delay_seconds), p_headers[i],
                                     p_expires_in[i], p_dedup_keys[i]);
        END LOOP;
        RETURN;
    END IF;

    RETURN QUERY
    INSERT INTO messages (queue_id, visible_at, expires_at, body, headers)
    SELECT q.id,
           now() + make_interval(secs => greatest(coalesce(m.delay, p_delay_seconds, 0), q.delay_seconds)),
           now() + make_interval(secs => m.expires_in),
           m.body, m.headers
      FROM unnest(p_bodies, p_headers, p_delays, p_expires_in) WITH ORDINALITY AS m(body, headers, delay, expires_in, ord)
     WHERE m.ord <= n
     ORDER BY m.ord
    RETURNING sequence;

    PERFORM wake(q.id, p_account, p_queue);
END
$$;

CREATE OR REPLACE FUNCTION account_send_entries(p_account text, p_queue text, p_entries jsonb) RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    n integer;
    e jsonb;
    i integer := 0;
    k text;
    h jsonb;
    bodies jsonb[] := '{}';
    headers jsonb[] := '{}';
    delays integer[] := '{}';
    expires integer[] := '{}';
    keys text[] := '{}';
BEGIN
    PERFORM queue_id(p_account, p_queue);
    IF p_entries IS NULL OR jsonb_typeof(p_entries) <> 'array' THEN
        PERFORM raise_error('SQ005', 'invalid entries: use a JSON array of 1 to 1000 objects like {"body": {...}}');
    END IF;
    n := jsonb_array_length(p_entries);
    IF n < 1 OR n > 1000 THEN
        PERFORM out_of_range('number of entries', n, 1, 1000);
    END IF;
    FOR e IN SELECT value FROM jsonb_array_elements(p_entries) LOOP
        IF jsonb_typeof(e) <> 'object' THEN
            PERFORM raise_error('SQ005', format('invalid entries[%s]: use an object like {"body": {...}}', i));
        END IF;
        FOR k IN SELECT jsonb_object_keys(e) LOOP
            IF k NOT IN ('body', 'headers', 'delay_seconds', 'expires_in_seconds', 'dedup_key') THEN
                PERFORM raise_error('SQ005', format('unknown field %s in entries[%s]: use body, headers, delay_seconds, expires_in_seconds, dedup_key',
                                                    to_json(k)::text, i));
            END IF;
        END LOOP;
        IF e -> 'body' IS NULL OR jsonb_typeof(e -> 'body') = 'null' THEN
            PERFORM raise_error('SQ005', format('entries[%s] has no body: give "body", any JSON value but null', i));
        END IF;
        h := e -> 'headers';
        IF h IS NOT NULL AND jsonb_typeof(h) = 'null' THEN
            h := NULL;
        END IF;
        IF h IS NOT NULL AND (jsonb_typeof(h) <> 'object'
                              OR EXISTS (SELECT 1 FROM jsonb_each(h) x WHERE jsonb_typeof(x.value) <> 'string')) THEN
            PERFORM raise_error('SQ005', format('invalid entries[%s].headers: use a JSON object of string values like {"k": "v"}', i));
        END IF;
        IF e ? 'dedup_key' AND jsonb_typeof(e -> 'dedup_key') NOT IN ('string', 'null') THEN
            PERFORM raise_error('SQ005', format('invalid entries[%s].dedup_key: use a string of 1 to 128 characters', i));
        END IF;
        IF length(e ->> 'dedup_key') NOT BETWEEN 1 AND 128 THEN
            PERFORM raise_error('SQ005', format('invalid entries[%s].dedup_key: use a string of 1 to 128 characters, got %s',
                                                i, length(e ->> 'dedup_key')));
        END IF;
        bodies := array_append(bodies, e -> 'body');
        headers := array_append(headers, h);
        delays := array_append(delays, entry_int(e, 'delay_seconds', i, 0, 43200));
        expires := array_append(expires, entry_int(e, 'expires_in_seconds', i, 1, 1209600));
        keys := array_append(keys, e ->> 'dedup_key');
        i := i + 1;
    END LOOP;
    RETURN QUERY SELECT s FROM account_send_batch(p_account, p_queue, bodies, 0, headers, delays, expires, keys) s;
END
$$;

CREATE FUNCTION send(queue text, body jsonb, delay_seconds integer DEFAULT 0, headers jsonb DEFAULT NULL,
                     expires_in_seconds integer DEFAULT NULL, dedup_key text DEFAULT NULL) RETURNS bigint
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_send('000000000001', send.queue, send.body, send.delay_seconds, send.headers,
                        send.expires_in_seconds, send.dedup_key);
END;

CREATE FUNCTION send_batch(queue text, bodies jsonb[], delay_seconds integer DEFAULT 0) RETURNS SETOF bigint
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_send_batch('000000000001', send_batch.queue, send_batch.bodies, send_batch.delay_seconds);
END;

ALTER TYPE received_message DROP ATTRIBUTE group_key;

CREATE OR REPLACE FUNCTION account_receive(p_account text, p_queue text, p_max_messages integer DEFAULT 1,
                                p_visibility_timeout_seconds integer DEFAULT NULL)
RETURNS SETOF received_message
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
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
    -- The claim is an ARRAY(...) sub-select rather than a CTE joined to the
    -- UPDATE: PL/pgSQL caches a generic plan, and for a join the generic
    -- plan may hash the whole queue; = ANY(array) always probes the
    -- primary key, so receive costs the same at any backlog.
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
        RETURNING m.sequence, m.body, m.headers, m.receive_count, m.created_at, m.visible_at, m.receipt
    )
    SELECT l.sequence, l.body, l.headers, l.receive_count, l.created_at, l.visible_at, l.receipt
      FROM leased l
     ORDER BY l.sequence;
END
$$;

CREATE OR REPLACE FUNCTION account_receive_delete(p_account text, p_queue text, p_max_messages integer DEFAULT 1)
RETURNS SETOF received_message
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    q queues;
BEGIN
    SELECT * INTO q FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_max_messages IS NULL OR p_max_messages < 1 OR p_max_messages > 1000 THEN
        PERFORM out_of_range('max_messages', p_max_messages, 1, 1000);
    END IF;
    -- The same claim as account_receive (see there for the ARRAY form).
    RETURN QUERY
    WITH gone AS (
        DELETE FROM messages m
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
        RETURNING m.sequence, m.body, m.headers, m.receive_count + 1 AS receive_count, m.created_at
    )
    SELECT g.sequence, g.body, g.headers, g.receive_count, g.created_at, now(), NULL::uuid
      FROM gone g
     ORDER BY g.sequence;
END
$$;

CREATE OR REPLACE FUNCTION account_peek(p_account text, p_queue text, p_max_messages integer DEFAULT 10)
RETURNS SETOF received_message
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    q queues;
BEGIN
    SELECT * INTO q FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_max_messages IS NULL OR p_max_messages < 1 OR p_max_messages > 1000 THEN
        PERFORM out_of_range('max_messages', p_max_messages, 1, 1000);
    END IF;
    -- Peek shows what receive would return next, without claiming it; the
    -- receipt column is NULL so a peek can never settle a lease.
    RETURN QUERY
    SELECT m.sequence, m.body, m.headers, m.receive_count, m.created_at, m.visible_at, NULL::uuid
      FROM messages m
     WHERE m.queue_id = q.id
       AND m.visible_at <= now()
       AND m.receive_count < q.max_receive_count
       AND (m.expires_at IS NULL OR m.expires_at > now())
     ORDER BY m.visible_at, m.sequence
     LIMIT p_max_messages;
END
$$;

CREATE OR REPLACE FUNCTION account_peek_after(p_account text, p_queue text, p_after bigint, p_max_messages integer)
RETURNS SETOF received_message
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    q queues;
BEGIN
    SELECT * INTO q FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    PERFORM check_page(p_after, p_max_messages);
    RETURN QUERY
    SELECT m.sequence, m.body, m.headers, m.receive_count, m.created_at, m.visible_at, NULL::uuid
      FROM messages m
     WHERE m.queue_id = q.id
       AND m.sequence > p_after
       AND m.visible_at <= now()
       AND m.receive_count < q.max_receive_count
       AND (m.expires_at IS NULL OR m.expires_at > now())
     ORDER BY m.sequence
     LIMIT p_max_messages;
END
$$;

CREATE OR REPLACE FUNCTION account_redrive(p_account text, p_queue text, p_max_messages integer DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
    n bigint;
BEGIN
    qid := queue_id(p_account, p_queue);
    IF p_max_messages IS NOT NULL AND p_max_messages < 1 THEN
        PERFORM out_of_range('max_messages', p_max_messages, 1, 2147483647);
    END IF;
    WITH moved AS (
        DELETE FROM dead_letters d
         WHERE d.queue_id = qid
           AND d.sequence = ANY (ARRAY(
               SELECT p.sequence FROM dead_letters p
                WHERE p.queue_id = qid
                ORDER BY p.failed_at, p.sequence
                LIMIT p_max_messages
                  FOR UPDATE SKIP LOCKED))
        RETURNING d.*
    )
    INSERT INTO messages (queue_id, sequence, visible_at, created_at, expires_at, body, headers)
    SELECT qid, moved.sequence, now(), moved.created_at, moved.expires_at, moved.body, moved.headers
      FROM moved
    ON CONFLICT (queue_id, sequence) DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        PERFORM wake(qid, p_account, p_queue);
    END IF;
    RETURN n;
END
$$;

CREATE OR REPLACE FUNCTION account_redrive_sequences(p_account text, p_queue text, p_sequences bigint[]) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
    n bigint;
BEGIN
    qid := queue_id(p_account, p_queue);
    n := coalesce(cardinality(p_sequences), 0);
    IF n < 1 OR n > 1000 THEN
        PERFORM out_of_range('number of sequences', n, 1, 1000);
    END IF;
    WITH moved AS (
        DELETE FROM dead_letters d
         WHERE d.queue_id = qid AND d.sequence = ANY (p_sequences)
        RETURNING d.*
    )
    INSERT INTO messages (queue_id, sequence, visible_at, created_at, expires_at, body, headers)
    SELECT qid, moved.sequence, now(), moved.created_at, moved.expires_at, moved.body, moved.headers
      FROM moved
    ON CONFLICT (queue_id, sequence) DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        PERFORM wake(qid, p_account, p_queue);
    END IF;
    RETURN n;
END
$$;

CREATE OR REPLACE FUNCTION apply_queue_options(q queues, p_options jsonb) RETURNS queues
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    k text;
    v jsonb;
    n numeric;
    target queues;
    hop queues;
    hops integer;
BEGIN
    IF p_options IS NULL THEN
        RETURN q;
    END IF;
    IF jsonb_typeof(p_options) <> 'object' THEN
        PERFORM raise_error('SQ005', 'invalid queue options: use a JSON object');
    END IF;
    FOR k, v IN SELECT key, value FROM jsonb_each(p_options) LOOP
        IF k = 'dead_letter_queue' THEN
            IF jsonb_typeof(v) = 'null' OR v = '""'::jsonb THEN
                q.dead_letter_queue_id := NULL;
                CONTINUE;
            END IF;
            IF jsonb_typeof(v) <> 'string' THEN
                PERFORM raise_error('SQ005', format('invalid queue option dead_letter_queue = %s: use a queue name, or null for the dead-letter table', v::text));
            END IF;
            IF v #>> '{}' = q.name THEN
                PERFORM raise_error('SQ005', format('invalid dead_letter_queue %s: a queue cannot be its own dead-letter queue', v::text));
            END IF;
            SELECT * INTO target FROM queues WHERE account = q.account AND name = v #>> '{}';
            IF NOT FOUND THEN
                PERFORM raise_error('SQ005', format('invalid dead_letter_queue %s: no such queue in account %s; create it first', v::text, q.account));
            END IF;
            -- Refuse a cycle: following the target's own dead-letter queues
            -- must not lead back to this queue.
            hop := target;
            hops := 0;
            WHILE hop.dead_letter_queue_id IS NOT NULL AND hops < 1000 LOOP
                IF q.id IS NOT NULL AND hop.dead_letter_queue_id = q.id THEN
                    PERFORM raise_error('SQ005', format('invalid dead_letter_queue %s: its dead letters go (through %s) back to %s: a cycle',
                        v::text, to_json(hop.name)::text, to_json(q.name)::text));
                END IF;
                SELECT * INTO hop FROM queues WHERE id = hop.dead_letter_queue_id;
                hops := hops + 1;
            END LOOP;
            q.dead_letter_queue_id := target.id;
            CONTINUE;
        END IF;
        IF jsonb_typeof(v) <> 'number' OR (v::text)::numeric <> trunc((v::text)::numeric) THEN
            PERFORM raise_error('SQ005', format('invalid queue option %s = %s: use a whole number', k, v::text));
        END IF;
        n := (v::text)::numeric;
        IF n < -2147483648 OR n > 2147483647 THEN
            PERFORM raise_error('SQ005', format('invalid queue option %s = %s: out of range', k, v::text));
        END IF;
        CASE k
        WHEN 'visibility_timeout_seconds' THEN
            IF n < 0 OR n > 43200 THEN PERFORM out_of_range(k, n::bigint, 0, 43200); END IF;
            q.visibility_timeout_seconds := n;
        WHEN 'max_receive_count' THEN
            IF n < 1 OR n > 1000 THEN PERFORM out_of_range(k, n::bigint, 1, 1000); END IF;
            q.max_receive_count := n;
        WHEN 'delay_seconds' THEN
            IF n < 0 OR n > 43200 THEN PERFORM out_of_range(k, n::bigint, 0, 43200); END IF;
            q.delay_seconds := n;
        WHEN 'retention_seconds' THEN
            IF n < 60 OR n > 1209600 THEN PERFORM out_of_range(k, n::bigint, 60, 1209600); END IF;
            q.retention_seconds := n;
        WHEN 'max_message_bytes' THEN
            IF n < 1 OR n > 1048576 THEN PERFORM out_of_range(k, n::bigint, 1, 1048576); END IF;
            q.max_message_bytes := n;
        WHEN 'dedup_window_seconds' THEN
            IF n < 0 OR n > 86400 THEN PERFORM out_of_range(k, n::bigint, 0, 86400); END IF;
            q.dedup_window_seconds := n;
        ELSE
            PERFORM raise_error('SQ005', format('unknown queue option %s: use visibility_timeout_seconds, max_receive_count, delay_seconds, retention_seconds, max_message_bytes, dedup_window_seconds, dead_letter_queue', to_json(k)::text));
        END CASE;
    END LOOP;
    RETURN q;
END
$$;

CREATE FUNCTION receive(queue text, max_messages integer DEFAULT 1, visibility_timeout_seconds integer DEFAULT NULL)
RETURNS SETOF received_message
LANGUAGE sql
BEGIN ATOMIC
    SELECT * FROM account_receive('000000000001', receive.queue, receive.max_messages,
                                  receive.visibility_timeout_seconds);
END;

CREATE FUNCTION peek(queue text, max_messages integer DEFAULT 10) RETURNS SETOF received_message
LANGUAGE sql
BEGIN ATOMIC
    SELECT * FROM account_peek('000000000001', peek.queue, peek.max_messages);
END;

CREATE FUNCTION receive_delete(queue text, max_messages integer DEFAULT 1) RETURNS SETOF received_message
LANGUAGE sql
BEGIN ATOMIC
    SELECT * FROM account_receive_delete('000000000001', receive_delete.queue, receive_delete.max_messages);
END;

CREATE VIEW queue_stats AS
SELECT q.account,
       q.name AS queue,
       coalesce(s.ready, 0) AS ready,
       coalesce(s.delayed, 0) AS delayed,
       coalesce(s.inflight, 0) AS inflight,
       d.dlq,
       coalesce(s.oldest_ready_age_seconds, 0) AS oldest_ready_age_seconds,
       coalesce(s.total, 0) AS total,
       q.id AS queue_id,
       q.max_receive_count,
       q.visibility_timeout_seconds
  FROM queues q
 CROSS JOIN LATERAL (
       SELECT count(*) FILTER (WHERE m.visible_at <= now() AND m.receive_count < q.max_receive_count
                                 AND (m.expires_at IS NULL OR m.expires_at > now())) AS ready,
              count(*) FILTER (WHERE m.visible_at > now() AND m.receive_count = 0) AS delayed,
              count(*) FILTER (WHERE m.visible_at > now() AND m.receive_count > 0) AS inflight,
              extract(epoch FROM now() - min(m.created_at) FILTER (
                  WHERE m.visible_at <= now() AND m.receive_count < q.max_receive_count
                    AND (m.expires_at IS NULL OR m.expires_at > now())))::double precision AS oldest_ready_age_seconds,
              count(*) AS total
         FROM messages m
        WHERE m.queue_id = q.id) s
 CROSS JOIN LATERAL (SELECT count(*) AS dlq FROM dead_letters dl WHERE dl.queue_id = q.id) d;

CREATE OR REPLACE FUNCTION account_create_queue(p_account text, p_name text, p_options jsonb DEFAULT '{}') RETURNS queues
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    q queues;
BEGIN
    PERFORM check_name('queue', p_name);
    PERFORM 1 FROM accounts WHERE number = p_account;
    IF NOT FOUND THEN
        PERFORM raise_error('SQ010', format('account %s not found', coalesce(to_json(p_account)::text, 'NULL')));
    END IF;
    q.account := p_account;
    q.name := p_name;
    q.visibility_timeout_seconds := 30;
    q.max_receive_count := 5;
    q.delay_seconds := 0;
    q.retention_seconds := 345600;
    q.max_message_bytes := 262144;
    q.dedup_window_seconds := 300;
    q := apply_queue_options(q, p_options);
    INSERT INTO queues (account, name, visibility_timeout_seconds, max_receive_count, delay_seconds,
                        retention_seconds, max_message_bytes, dedup_window_seconds, dead_letter_queue_id)
    VALUES (p_account, p_name, q.visibility_timeout_seconds, q.max_receive_count, q.delay_seconds,
            q.retention_seconds, q.max_message_bytes, q.dedup_window_seconds, q.dead_letter_queue_id)
    RETURNING * INTO q;
    RETURN q;
EXCEPTION WHEN unique_violation THEN
    PERFORM raise_error('SQ002', format('queue %s already exists in account %s', to_json(p_name)::text, p_account));
END
$$;

CREATE OR REPLACE FUNCTION account_update_queue(p_account text, p_name text, p_options jsonb) RETURNS queues
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    q queues;
BEGIN
    SELECT * INTO q FROM queues WHERE account = p_account AND name = p_name FOR UPDATE;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_name); END IF;
    q := apply_queue_options(q, p_options);
    UPDATE queues SET visibility_timeout_seconds = q.visibility_timeout_seconds,
                      max_receive_count = q.max_receive_count,
                      delay_seconds = q.delay_seconds,
                      retention_seconds = q.retention_seconds,
                      max_message_bytes = q.max_message_bytes,
                      dedup_window_seconds = q.dedup_window_seconds,
                      dead_letter_queue_id = q.dead_letter_queue_id,
                      updated_at = now()
     WHERE id = q.id
    RETURNING * INTO q;
    -- Keep the last-lease marks in step with a changed receive limit.
    UPDATE messages SET final_lease = (receive_count >= q.max_receive_count)
     WHERE queue_id = q.id AND receive_count > 0
       AND final_lease <> (receive_count >= q.max_receive_count);
    RETURN q;
END
$$;

DROP TABLE message_groups;
DROP INDEX messages_group;
ALTER TABLE dead_letters DROP COLUMN group_key;
ALTER TABLE messages DROP COLUMN ready_at;
ALTER TABLE messages DROP COLUMN group_key;
ALTER TABLE queues DROP COLUMN fifo;
