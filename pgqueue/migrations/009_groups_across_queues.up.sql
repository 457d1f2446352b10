-- Message groups where messages move between queues.
--
-- A dead letter forwarded to its queue's dead_letter_queue (sweep,
-- account_fail) keeps its group there, in the order it failed, so a fifo
-- dead_letter_queue takes it and the group stays one at a time.
--
-- Topics and fifo queues. A publish carries no message group, so a copy in
-- a fifo queue would have none, against the queue's rule that every
-- message has one (migration 008). Subscribing a fifo queue to a topic is
-- refused, and so is a publish whose copies would reach a fifo queue (a
-- queue made fifo after it subscribed): the publish changes nothing and
-- says which queue and what to do.

CREATE FUNCTION fifo_subscriber(p_topic text, p_queue text) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM raise_error('SQ005', format('topic %s cannot deliver to queue %s: it is a fifo queue and publishes carry no group; send to the queue with a group, or unsubscribe it',
                                        to_json(p_topic)::text, to_json(p_queue)::text));
END
$$;

CREATE OR REPLACE FUNCTION publish_message(p_account text, p_topic text, p_body jsonb, p_headers jsonb,
                                p_delay_seconds integer) RETURNS integer
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    tid bigint;
    size bigint;
    big record;
    n integer;
    w record;
BEGIN
    SELECT id INTO tid FROM topics WHERE account = p_account AND name = p_topic;
    IF NOT FOUND THEN PERFORM topic_not_found(p_account, p_topic); END IF;
    IF p_body IS NULL THEN
        PERFORM raise_error('SQ005', 'invalid body NULL: use a JSON value');
    END IF;
    IF p_headers IS NOT NULL AND jsonb_typeof(p_headers) <> 'object' THEN
        PERFORM raise_error('SQ005', 'invalid headers: use a JSON object or NULL');
    END IF;
    IF p_delay_seconds IS NOT NULL AND (p_delay_seconds < 0 OR p_delay_seconds > 43200) THEN
        PERFORM out_of_range('delay_seconds', p_delay_seconds, 0, 43200);
    END IF;
    size := octet_length(p_body::text);
    SELECT q.name, q.max_message_bytes INTO big
      FROM subscriptions s JOIN queues q ON q.id = s.queue_id
     WHERE s.topic_id = tid AND q.max_message_bytes < size
       AND (s.filter IS NULL OR coalesce(p_headers @> s.filter, false))
     ORDER BY q.max_message_bytes LIMIT 1;
    IF FOUND THEN PERFORM too_large(big.name, size, big.max_message_bytes); END IF;
    SELECT q.name INTO big
      FROM subscriptions s JOIN queues q ON q.id = s.queue_id
     WHERE s.topic_id = tid AND q.fifo
       AND (s.filter IS NULL OR coalesce(p_headers @> s.filter, false))
     ORDER BY q.name LIMIT 1;
    IF FOUND THEN PERFORM fifo_subscriber(p_topic, big.name); END IF;
    INSERT INTO messages (queue_id, visible_at, body, headers)
    SELECT q.id, now() + make_interval(secs => greatest(coalesce(p_delay_seconds, 0), q.delay_seconds)), p_body, p_headers
      FROM subscriptions s JOIN queues q ON q.id = s.queue_id
     WHERE s.topic_id = tid
       AND (s.filter IS NULL OR coalesce(p_headers @> s.filter, false))
     ORDER BY q.id;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF coalesce(p_delay_seconds, 0) = 0 THEN
        FOR w IN
            SELECT q.name FROM subscriptions s
              JOIN queues q ON q.id = s.queue_id
              JOIN wake_interest wi ON wi.queue_id = q.id AND wi.until > now()
             WHERE s.topic_id = tid AND q.delay_seconds = 0
               AND (s.filter IS NULL OR coalesce(p_headers @> s.filter, false))
        LOOP
            PERFORM pg_notify(current_schema() || '_wake', p_account || '/' || w.name);
        END LOOP;
    END IF;
    RETURN n;
END
$$;

CREATE OR REPLACE FUNCTION account_subscribe(p_account text, p_topic text, p_queue text, p_filter jsonb DEFAULT NULL,
                                  p_source text DEFAULT 'api') RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    tid bigint;
    qid bigint;
    f jsonb;
BEGIN
    SELECT id INTO tid FROM topics WHERE account = p_account AND name = p_topic;
    IF NOT FOUND THEN PERFORM topic_not_found(p_account, p_topic); END IF;
    qid := queue_id(p_account, p_queue);
    IF (SELECT fifo FROM queues WHERE id = qid) THEN PERFORM fifo_subscriber(p_topic, p_queue); END IF;
    f := check_filter(p_filter);
    IF p_source IS NULL OR p_source NOT IN ('api', 'manifest') THEN
        PERFORM raise_error('SQ005', format('invalid subscription source %s: use api or manifest', coalesce(to_json(p_source)::text, 'NULL')));
    END IF;
    INSERT INTO subscriptions AS s (topic_id, queue_id, filter, source) VALUES (tid, qid, f, p_source)
    ON CONFLICT (topic_id, queue_id) DO UPDATE SET filter = excluded.filter, source = excluded.source;
END
$$;

CREATE OR REPLACE FUNCTION sweep() RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
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
        INSERT INTO dead_letters (queue_id, sequence, body, headers, receive_count, created_at, expires_at, reason, last_error)
        SELECT qid, moved.sequence, moved.body, moved.headers, moved.receive_count, moved.created_at, moved.expires_at,
               moved.reason, moved.error
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
