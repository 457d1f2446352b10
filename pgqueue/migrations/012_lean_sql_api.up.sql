-- The SQL API's hot calls as cheap as the same work written by hand
-- (issue #18). Measured with scripts/bench-sql; see BENCHMARKS.md.
--
-- - send_batch and receive were LANGUAGE sql wrappers (BEGIN ATOMIC).
--   Postgres cannot inline a volatile set-returning SQL function, and it
--   plans a non-inlined one's body again on every call; a plpgsql wrapper
--   keeps its plan for the session. Same names, arguments, defaults and
--   results. (Dropping them first also keeps Citus from refusing the
--   replacement of the functions they call; see 010.)
-- - account_send_batch decides once per call whether the batch is the
--   common case (no per-message options, no dedup keys, no groups, queue
--   not fifo) and takes the lean path: one queue lookup reading only the
--   columns it needs, one INSERT that checks each body's size as it goes,
--   and the wake-up check inline (one indexed read of wake_interest, a
--   NOTIFY only when someone listens) instead of a call to wake().
--   Everything else goes to the full path of 008, kept as send_batch_full.
--   The size check is still octet_length(body::text): jsonb's stored
--   size is no bound on its text (a number like 1e100000 is 22 bytes
--   stored and 100,001 as text), so nothing cheaper keeps the documented
--   limit exact.
-- - account_receive reads only the queue columns it uses and draws the
--   call's random lease once as text. Its claim is still planned again on
--   every call: with the LIMIT a plain parameter, each custom plan (LIMIT
--   10 known) looks cheaper than the generic plan, so the plan cache never
--   settles on the generic one, and a third of receive + ack's backend CPU
--   goes to that planning. Both ways of keeping the generic plan that work
--   on Postgres fail on Citus, so neither is used (one code path):
--   LIMIT (SELECT p_max_messages) inside the distributed UPDATE ("unrecognized
--   node type: 124"), and plan_cache_mode = force_generic_plan ("could not
--   create distributed plan").

DROP FUNCTION send_batch(text, jsonb[], integer, text);
DROP FUNCTION receive(text, integer, integer);

ALTER FUNCTION account_send_batch(text, text, jsonb[], integer, jsonb[], integer[], integer[], text[], text[])
    RENAME TO send_batch_full;

COMMENT ON FUNCTION send_batch_full(text, text, jsonb[], integer, jsonb[], integer[], integer[], text[], text[]) IS
    'account_send_batch''s full path (per-message options, dedup keys, groups, fifo queues); call account_send_batch';

CREATE FUNCTION account_send_batch(p_account text, p_queue text, p_bodies jsonb[], p_delay_seconds integer DEFAULT 0,
                                   p_headers jsonb[] DEFAULT NULL, p_delays integer[] DEFAULT NULL,
                                   p_expires_in integer[] DEFAULT NULL, p_dedup_keys text[] DEFAULT NULL,
                                   p_groups text[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
    qdelay integer;
    qmax integer;
    qfifo boolean;
    n integer := coalesce(cardinality(p_bodies), 0);
    visible timestamptz;
BEGIN
    IF p_headers IS NOT NULL OR p_delays IS NOT NULL OR p_expires_in IS NOT NULL
       OR p_dedup_keys IS NOT NULL OR p_groups IS NOT NULL THEN
        RETURN QUERY SELECT s FROM send_batch_full(p_account, p_queue, p_bodies, p_delay_seconds, p_headers,
                                                   p_delays, p_expires_in, p_dedup_keys, p_groups) s;
        RETURN;
    END IF;
    SELECT id, delay_seconds, max_message_bytes, fifo INTO qid, qdelay, qmax, qfifo
      FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
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
    SELECT qid, visible,
           CASE WHEN b.body IS NULL OR octet_length(b.body::text) > qmax
                THEN bad_body(p_queue, b.body, b.ord, qmax)
                ELSE b.body END
      FROM unnest(p_bodies) WITH ORDINALITY AS b(body, ord)
    RETURNING sequence;
    -- wake(), inline: a NOTIFY only when a long poll registered interest.
    IF visible <= now() AND EXISTS (SELECT 1 FROM wake_interest w WHERE w.queue_id = qid AND w.until > now()) THEN
        PERFORM pg_notify(current_schema() || '_wake', p_account || '/' || p_queue);
    END IF;
END
$$;

-- group_key puts every message of the batch into that group, in array order.
CREATE FUNCTION send_batch(queue text, bodies jsonb[], delay_seconds integer DEFAULT 0,
                           group_key text DEFAULT NULL) RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY SELECT s FROM account_send_batch('000000000001', queue, bodies, delay_seconds,
                                                  NULL, NULL, NULL, NULL,
                                                  CASE WHEN group_key IS NULL THEN NULL
                                                       ELSE array_fill(group_key, ARRAY[cardinality(bodies)]) END) s;
END
$$;

CREATE OR REPLACE FUNCTION account_receive(p_account text, p_queue text, p_max_messages integer DEFAULT 1,
                                           p_visibility_timeout_seconds integer DEFAULT NULL)
RETURNS SETOF received_message
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
    vt integer;
    max_rc integer;
    -- One draw per call; each message's receipt is derived from it and the
    -- message's sequence, so the UPDATE calls no volatile function (010).
    lease text := gen_random_uuid()::text;
BEGIN
    SELECT id, coalesce(p_visibility_timeout_seconds, visibility_timeout_seconds), max_receive_count
      INTO qid, vt, max_rc
      FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_max_messages IS NULL OR p_max_messages < 1 OR p_max_messages > 1000 THEN
        PERFORM out_of_range('max_messages', p_max_messages, 1, 1000);
    END IF;
    IF vt < 0 OR vt > 43200 THEN
        PERFORM out_of_range('visibility_timeout_seconds', vt, 0, 43200);
    END IF;
    -- The same claim as in 008 and 010. Parked group members have
    -- visible_at = 'infinity', beyond the index range this walks.
    RETURN QUERY
    WITH leased AS (
        UPDATE messages m
           SET visible_at = now() + make_interval(secs => vt),
               receive_count = m.receive_count + 1,
               final_lease = (m.receive_count + 1 >= max_rc),
               receipt = md5(lease || m.sequence::text)::uuid
         WHERE m.queue_id = qid
           AND m.sequence = ANY (ARRAY(
               SELECT c.sequence
                 FROM messages c
                WHERE c.queue_id = qid
                  AND c.visible_at <= now()
                  AND c.receive_count < max_rc
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
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY SELECT * FROM account_receive('000000000001', queue, max_messages, visibility_timeout_seconds);
END
$$;
