-- Back to 013: the account_* functions of the hot path with their own
-- bodies again (as 013 left them), the LANGUAGE sql wrappers that called
-- them, and no queue_* functions.
DROP FUNCTION send(text, jsonb, integer, jsonb, integer, text, text);
DROP FUNCTION delete(text, bigint);
DROP FUNCTION set_visibility(text, bigint, integer);
DROP FUNCTION receive_delete(text, integer);

CREATE OR REPLACE FUNCTION account_send(p_account text, p_queue text, p_body jsonb, p_delay_seconds integer DEFAULT 0, p_headers jsonb DEFAULT NULL::jsonb, p_expires_in_seconds integer DEFAULT NULL::integer, p_dedup_key text DEFAULT NULL::text, p_group text DEFAULT NULL::text)
 RETURNS bigint
 LANGUAGE plpgsql
 SET search_path FROM CURRENT
AS $function$
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
$function$;


CREATE OR REPLACE FUNCTION account_send_batch(p_account text, p_queue text, p_bodies jsonb[], p_delay_seconds integer DEFAULT 0, p_headers jsonb[] DEFAULT NULL::jsonb[], p_delays integer[] DEFAULT NULL::integer[], p_expires_in integer[] DEFAULT NULL::integer[], p_dedup_keys text[] DEFAULT NULL::text[], p_groups text[] DEFAULT NULL::text[])
 RETURNS SETOF bigint
 LANGUAGE plpgsql
 SET search_path FROM CURRENT
AS $function$
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
$function$;


CREATE OR REPLACE FUNCTION account_receive(p_account text, p_queue text, p_max_messages integer DEFAULT 1, p_visibility_timeout_seconds integer DEFAULT NULL::integer)
 RETURNS SETOF received_message
 LANGUAGE plpgsql
 SET search_path FROM CURRENT
AS $function$
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
$function$;


CREATE OR REPLACE FUNCTION account_receive_delete(p_account text, p_queue text, p_max_messages integer DEFAULT 1)
 RETURNS SETOF received_message
 LANGUAGE plpgsql
 SET search_path FROM CURRENT
AS $function$
DECLARE
    q queues;
BEGIN
    SELECT * INTO q FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_max_messages IS NULL OR p_max_messages < 1 OR p_max_messages > 1000 THEN
        PERFORM out_of_range('max_messages', p_max_messages, 1, 1000);
    END IF;
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
        RETURNING m.sequence, m.body, m.headers, m.receive_count + 1 AS receive_count, m.created_at, m.group_key
    )
    SELECT g.sequence, g.body, g.headers, g.receive_count, g.created_at, now(), NULL::uuid, g.group_key
      FROM gone g
     ORDER BY g.sequence;
END
$function$;


CREATE OR REPLACE FUNCTION account_delete(p_account text, p_queue text, p_sequence bigint, p_receipt uuid DEFAULT NULL::uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 SET search_path FROM CURRENT
AS $function$
DECLARE
    qid bigint;
    required boolean;
    current_receipt uuid;
BEGIN
    SELECT id, require_receipt INTO qid, required FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_receipt IS NULL THEN
        DELETE FROM messages
         WHERE queue_id = qid AND sequence = p_sequence
           AND NOT (required AND receive_count > 0 AND visible_at > now());
        IF FOUND THEN
            RETURN true;
        END IF;
        IF required THEN
            PERFORM 1 FROM messages WHERE queue_id = qid AND sequence = p_sequence;
            IF FOUND THEN
                PERFORM raise_error('SQ005', format('message %s of queue %s is leased and the queue requires a receipt to delete it: give the receipt of the receive',
                                                    p_sequence, to_json(p_queue)::text));
            END IF;
        END IF;
        RETURN false;
    END IF;
    DELETE FROM messages WHERE queue_id = qid AND sequence = p_sequence AND receipt = p_receipt;
    IF FOUND THEN
        RETURN true;
    END IF;
    SELECT receipt INTO current_receipt FROM messages WHERE queue_id = qid AND sequence = p_sequence;
    IF FOUND THEN
        PERFORM raise_error('SQ006', format('stale receipt %s for message %s in queue %s: the message was received again since; use the latest receipt',
                                            p_receipt, p_sequence, to_json(p_queue)::text));
    END IF;
    RETURN false;
END
$function$;


CREATE OR REPLACE FUNCTION account_ack(p_account text, p_queue text, p_sequences bigint[], p_receipts uuid[] DEFAULT NULL::uuid[])
 RETURNS SETOF bigint
 LANGUAGE plpgsql
 SET search_path FROM CURRENT
AS $function$
DECLARE
    qid bigint;
BEGIN
    SELECT id INTO qid FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_receipts IS NULL THEN
        RETURN QUERY
        DELETE FROM messages m
         WHERE m.queue_id = qid AND m.sequence = ANY (p_sequences)
        RETURNING m.sequence;
        RETURN;
    END IF;
    RETURN QUERY
    DELETE FROM messages m
     USING unnest(p_sequences, p_receipts) AS a(sequence, receipt)
     WHERE m.queue_id = qid AND m.sequence = a.sequence
       AND (a.receipt IS NULL OR m.receipt = a.receipt)
    RETURNING m.sequence;
END
$function$;


CREATE OR REPLACE FUNCTION account_nack(p_account text, p_queue text, p_sequences bigint[], p_receipts uuid[] DEFAULT NULL::uuid[], p_delays integer[] DEFAULT NULL::integer[], p_errors text[] DEFAULT NULL::text[])
 RETURNS SETOF bigint
 LANGUAGE plpgsql
 SET search_path FROM CURRENT
AS $function$
DECLARE
    qid bigint;
    bad integer;
BEGIN
    qid := queue_id(p_account, p_queue);
    IF p_delays IS NOT NULL THEN
        SELECT x INTO bad FROM unnest(p_delays) x WHERE x < 0 OR x > 43200 LIMIT 1;
        IF FOUND THEN PERFORM out_of_range('retry delay seconds', bad, 0, 43200); END IF;
    END IF;
    RETURN QUERY
    UPDATE messages m
       SET visible_at = now() + make_interval(secs => coalesce(a.delay, 0)),
           last_error = coalesce(a.error, m.last_error)
      FROM unnest(p_sequences, p_receipts, p_delays, p_errors) AS a(sequence, receipt, delay, error)
     WHERE m.queue_id = qid AND m.sequence = a.sequence
       AND (a.receipt IS NULL OR m.receipt = a.receipt)
    RETURNING m.sequence;
    IF p_delays IS NULL OR EXISTS (SELECT 1 FROM unnest(p_delays) x WHERE coalesce(x, 0) = 0) THEN
        PERFORM wake(qid, p_account, p_queue);
    END IF;
END
$function$;


CREATE OR REPLACE FUNCTION account_fail(p_account text, p_queue text, p_sequences bigint[], p_receipts uuid[] DEFAULT NULL::uuid[], p_reasons text[] DEFAULT NULL::text[], p_errors text[] DEFAULT NULL::text[])
 RETURNS SETOF bigint
 LANGUAGE plpgsql
 SET search_path FROM CURRENT
AS $function$
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
$function$;


CREATE OR REPLACE FUNCTION account_release(p_account text, p_queue text, p_sequences bigint[], p_receipts uuid[])
 RETURNS SETOF bigint
 LANGUAGE plpgsql
 SET search_path FROM CURRENT
AS $function$
DECLARE
    qid bigint;
    t timestamptz := now();
BEGIN
    qid := queue_id(p_account, p_queue);
    RETURN QUERY
    UPDATE messages m
       SET visible_at = t,
           receive_count = greatest(m.receive_count - 1, 0),
           final_lease = false,
           receipt = NULL
      FROM unnest(p_sequences, p_receipts) AS a(sequence, receipt)
     WHERE m.queue_id = qid AND m.sequence = a.sequence
       AND m.receipt = a.receipt AND m.visible_at > t
    RETURNING m.sequence;
    PERFORM wake(qid, p_account, p_queue);
END
$function$;


CREATE OR REPLACE FUNCTION account_set_visibility(p_account text, p_queue text, p_sequence bigint, p_seconds integer, p_receipt uuid DEFAULT NULL::uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 SET search_path FROM CURRENT
AS $function$
DECLARE
    qid bigint;
BEGIN
    qid := queue_id(p_account, p_queue);
    IF p_seconds IS NULL OR p_seconds < 0 OR p_seconds > 43200 THEN
        PERFORM out_of_range('visibility seconds', p_seconds, 0, 43200);
    END IF;
    UPDATE messages SET visible_at = now() + make_interval(secs => p_seconds)
     WHERE queue_id = qid AND sequence = p_sequence
       AND (p_receipt IS NULL OR receipt = p_receipt);
    IF NOT FOUND THEN
        IF p_receipt IS NOT NULL THEN
            PERFORM 1 FROM messages WHERE queue_id = qid AND sequence = p_sequence;
            IF FOUND THEN
                PERFORM raise_error('SQ006', format('stale receipt %s for message %s in queue %s: the message was received again since; use the latest receipt',
                                                    p_receipt, p_sequence, to_json(p_queue)::text));
            END IF;
        END IF;
        RETURN false;
    END IF;
    IF p_seconds = 0 THEN
        PERFORM wake(qid, p_account, p_queue);
    END IF;
    RETURN true;
END
$function$;


DROP FUNCTION queue_send(bigint, text, text, jsonb, integer, jsonb, integer, text, text);
DROP FUNCTION queue_send_batch(bigint, text, text, jsonb[], integer, jsonb[], integer[], integer[], text[], text[]);
DROP FUNCTION queue_receive(bigint, text, text, integer, integer);
DROP FUNCTION queue_receive_delete(bigint, text, text, integer);
DROP FUNCTION queue_delete(bigint, text, text, bigint, uuid, boolean);
DROP FUNCTION queue_ack(bigint, text, text, bigint[], uuid[], boolean);
DROP FUNCTION queue_nack(bigint, text, text, bigint[], uuid[], integer[], text[]);
DROP FUNCTION queue_fail(bigint, text, text, bigint[], uuid[], text[], text[]);
DROP FUNCTION queue_release(bigint, text, text, bigint[], uuid[]);
DROP FUNCTION queue_set_visibility(bigint, text, text, bigint, integer, uuid);

CREATE OR REPLACE FUNCTION delete(queue text, sequence bigint)
 RETURNS boolean
 LANGUAGE sql
BEGIN ATOMIC
 SELECT account_delete('000000000001'::text, queue, sequence) AS account_delete;
END;


CREATE OR REPLACE FUNCTION set_visibility(queue text, sequence bigint, seconds integer)
 RETURNS boolean
 LANGUAGE sql
BEGIN ATOMIC
 SELECT account_set_visibility('000000000001'::text, queue, sequence, seconds) AS account_set_visibility;
END;


CREATE OR REPLACE FUNCTION send(queue text, body jsonb, delay_seconds integer DEFAULT 0, headers jsonb DEFAULT NULL::jsonb, expires_in_seconds integer DEFAULT NULL::integer, dedup_key text DEFAULT NULL::text, group_key text DEFAULT NULL::text)
 RETURNS bigint
 LANGUAGE sql
BEGIN ATOMIC
 SELECT account_send('000000000001'::text, queue, body, delay_seconds, headers, expires_in_seconds, dedup_key, group_key) AS account_send;
END;


CREATE OR REPLACE FUNCTION receive_delete(queue text, max_messages integer DEFAULT 1)
 RETURNS SETOF received_message
 LANGUAGE sql
BEGIN ATOMIC
 SELECT account_receive_delete.sequence,
     account_receive_delete.body,
     account_receive_delete.headers,
     account_receive_delete.receive_count,
     account_receive_delete.created_at,
     account_receive_delete.visible_at,
     account_receive_delete.receipt,
     account_receive_delete.group_key
    FROM account_receive_delete('000000000001'::text, receive_delete.queue, receive_delete.max_messages) account_receive_delete(sequence, body, headers, receive_count, created_at, visible_at, receipt, group_key);
END;


