-- Back to 014: queue_send_batch with its INSERT from unnest, the full
-- path as send_batch_full (008's body), and the wrappers through
-- queue_id() and account_send_batch.

-- 008's account_send_batch, kept by 012 as the full path.
CREATE FUNCTION send_batch_full(p_account text, p_queue text, p_bodies jsonb[], p_delay_seconds integer DEFAULT 0,
                                   p_headers jsonb[] DEFAULT NULL, p_delays integer[] DEFAULT NULL,
                                   p_expires_in integer[] DEFAULT NULL, p_dedup_keys text[] DEFAULT NULL,
                                   p_groups text[] DEFAULT NULL)
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
    IF q.fifo AND (p_groups IS NULL OR cardinality(p_groups) < n
                   OR EXISTS (SELECT 1 FROM unnest(p_groups) g WHERE g IS NULL)) THEN
        PERFORM fifo_needs_group(p_queue);
    END IF;

    IF p_headers IS NULL AND p_delays IS NULL AND p_expires_in IS NULL AND p_dedup_keys IS NULL AND p_groups IS NULL THEN
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
                                     p_expires_in[i], p_dedup_keys[i], p_groups[i]);
        END LOOP;
        RETURN;
    END IF;

    RETURN QUERY
    INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key)
    SELECT q.id,
           now() + make_interval(secs => greatest(coalesce(m.delay, p_delay_seconds, 0), q.delay_seconds)),
           now() + make_interval(secs => m.expires_in),
           m.body, m.headers, m.grp
      FROM unnest(p_bodies, p_headers, p_delays, p_expires_in, p_groups)
           WITH ORDINALITY AS m(body, headers, delay, expires_in, grp, ord)
     WHERE m.ord <= n
     ORDER BY m.ord
    RETURNING sequence;

    PERFORM wake(q.id, p_account, p_queue);
END
$$;

COMMENT ON FUNCTION send_batch_full(text, text, jsonb[], integer, jsonb[], integer[], integer[], text[], text[]) IS
    'account_send_batch''s full path (per-message options, dedup keys, groups, fifo queues); call account_send_batch';

-- As in 014.
CREATE OR REPLACE FUNCTION queue_send_batch(p_queue_id bigint, p_account text, p_queue text, p_bodies jsonb[],
                                 p_delay_seconds integer DEFAULT 0, p_headers jsonb[] DEFAULT NULL,
                                 p_delays integer[] DEFAULT NULL, p_expires_in integer[] DEFAULT NULL,
                                 p_dedup_keys text[] DEFAULT NULL, p_groups text[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qdelay integer;
    qmax integer;
    qfifo boolean;
    n integer := coalesce(cardinality(p_bodies), 0);
    visible timestamptz;
BEGIN
    SELECT delay_seconds, max_message_bytes, fifo INTO qdelay, qmax, qfifo
      FROM queues WHERE id = p_queue_id AND account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_headers IS NOT NULL OR p_delays IS NOT NULL OR p_expires_in IS NOT NULL
       OR p_dedup_keys IS NOT NULL OR p_groups IS NOT NULL THEN
        RETURN QUERY SELECT s FROM send_batch_full(p_account, p_queue, p_bodies, p_delay_seconds, p_headers,
                                                   p_delays, p_expires_in, p_dedup_keys, p_groups) s;
        RETURN;
    END IF;
    IF n = 0 THEN
        RETURN;
    END IF;
    IF n > 1000 THEN PERFORM out_of_range('batch size', n, 1, 1000); END IF;
    IF p_delay_seconds < 0 OR p_delay_seconds > 43200 THEN
        PERFORM out_of_range('delay_seconds', p_delay_seconds, 0, 43200);
    END IF;
    IF qfifo THEN PERFORM fifo_needs_group(p_queue); END IF;

    visible := now() + make_interval(secs => greatest(coalesce(p_delay_seconds, 0), qdelay));
    RETURN QUERY
    INSERT INTO messages (queue_id, visible_at, body)
    SELECT p_queue_id, visible,
           CASE WHEN b.body IS NULL OR octet_length(b.body::text) > qmax
                THEN bad_body(p_queue, b.body, b.ord, qmax)
                ELSE b.body END
      FROM unnest(p_bodies) WITH ORDINALITY AS b(body, ord)
    RETURNING sequence;
    -- wake(), inline: a NOTIFY only when a long poll registered interest.
    IF visible <= now() AND EXISTS (SELECT 1 FROM wake_interest w WHERE w.queue_id = p_queue_id AND w.until > now()) THEN
        PERFORM pg_notify(current_schema() || '_wake', p_account || '/' || p_queue);
    END IF;
END
$$;

-- As in 014.
CREATE OR REPLACE FUNCTION account_send_batch(p_account text, p_queue text, p_bodies jsonb[], p_delay_seconds integer DEFAULT 0,
                                              p_headers jsonb[] DEFAULT NULL, p_delays integer[] DEFAULT NULL,
                                              p_expires_in integer[] DEFAULT NULL, p_dedup_keys text[] DEFAULT NULL,
                                              p_groups text[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY SELECT s FROM queue_send_batch(queue_id(p_account, p_queue), p_account, p_queue, p_bodies,
                                                p_delay_seconds, p_headers, p_delays, p_expires_in,
                                                p_dedup_keys, p_groups) s;
END
$$;

-- As in 012.
CREATE OR REPLACE FUNCTION send_batch(queue text, bodies jsonb[], delay_seconds integer DEFAULT 0,
                           group_key text DEFAULT NULL) RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY SELECT s FROM account_send_batch('000000000001', queue, bodies, delay_seconds,
                                                  NULL, NULL, NULL, NULL,
                                                  CASE WHEN group_key IS NULL THEN NULL
                                                       ELSE array_fill(group_key, ARRAY[cardinality(bodies)]) END) s;
END
$$;
