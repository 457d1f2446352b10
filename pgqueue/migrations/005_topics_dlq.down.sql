-- Reverts 005_topics_dlq.up.sql.

DROP FUNCTION list_topics();
DROP FUNCTION publish_batch(text, jsonb[], integer);
DROP FUNCTION delete_topic(text);
DROP FUNCTION subscribe(text, text, jsonb);
DROP FUNCTION account_list_topics(text);
DROP FUNCTION account_publish_batch(text, text, jsonb[], jsonb[], integer, integer[]);
DROP FUNCTION account_subscribe(text, text, text, jsonb, text);
DROP FUNCTION check_filter(jsonb);
ALTER TABLE subscriptions DROP COLUMN source;
ALTER TABLE subscriptions DROP COLUMN filter;

-- Copy a message into every queue subscribed to the topic, in this one
-- transaction. Each copy gets its own sequence and honours its queue's
-- delay_seconds. Returns the number of copies.
CREATE OR REPLACE FUNCTION account_publish(p_account text, p_topic text, p_body jsonb, p_headers jsonb DEFAULT NULL) RETURNS integer
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
    size := octet_length(p_body::text);
    SELECT q.name, q.max_message_bytes INTO big
      FROM subscriptions s JOIN queues q ON q.id = s.queue_id
     WHERE s.topic_id = tid AND q.max_message_bytes < size
     ORDER BY q.max_message_bytes LIMIT 1;
    IF FOUND THEN PERFORM too_large(big.name, size, big.max_message_bytes); END IF;
    INSERT INTO messages (queue_id, visible_at, body, headers)
    SELECT q.id, now() + make_interval(secs => q.delay_seconds), p_body, p_headers
      FROM subscriptions s JOIN queues q ON q.id = s.queue_id
     WHERE s.topic_id = tid
     ORDER BY q.id;
    GET DIAGNOSTICS n = ROW_COUNT;
    FOR w IN
        SELECT q.name FROM subscriptions s
          JOIN queues q ON q.id = s.queue_id
          JOIN wake_interest wi ON wi.queue_id = q.id AND wi.until > now()
         WHERE s.topic_id = tid AND q.delay_seconds = 0
    LOOP
        PERFORM pg_notify(current_schema() || '_wake', p_account || '/' || w.name);
    END LOOP;
    RETURN n;
END
$$;


DROP FUNCTION publish_message(text, text, jsonb, jsonb, integer);

CREATE FUNCTION account_subscribe(p_account text, p_topic text, p_queue text) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    tid bigint;
    qid bigint;
BEGIN
    SELECT id INTO tid FROM topics WHERE account = p_account AND name = p_topic;
    IF NOT FOUND THEN PERFORM topic_not_found(p_account, p_topic); END IF;
    qid := queue_id(p_account, p_queue);
    INSERT INTO subscriptions (topic_id, queue_id) VALUES (tid, qid) ON CONFLICT DO NOTHING;
END
$$;


CREATE FUNCTION subscribe(topic text, queue text) RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_subscribe('000000000001', subscribe.topic, subscribe.queue);
END;

-- Dead-letter queues.

CREATE OR REPLACE FUNCTION apply_queue_options(q queues, p_options jsonb) RETURNS queues
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    k text;
    v jsonb;
    n numeric;
BEGIN
    IF p_options IS NULL THEN
        RETURN q;
    END IF;
    IF jsonb_typeof(p_options) <> 'object' THEN
        PERFORM raise_error('SQ005', 'invalid queue options: use a JSON object');
    END IF;
    FOR k, v IN SELECT key, value FROM jsonb_each(p_options) LOOP
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
            PERFORM raise_error('SQ005', format('unknown queue option %s: use visibility_timeout_seconds, max_receive_count, delay_seconds, retention_seconds, max_message_bytes, dedup_window_seconds', to_json(k)::text));
        END CASE;
    END LOOP;
    RETURN q;
END
$$;

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
    q.visibility_timeout_seconds := 30;
    q.max_receive_count := 5;
    q.delay_seconds := 0;
    q.retention_seconds := 345600;
    q.max_message_bytes := 262144;
    q.dedup_window_seconds := 300;
    q := apply_queue_options(q, p_options);
    INSERT INTO queues (account, name, visibility_timeout_seconds, max_receive_count, delay_seconds,
                        retention_seconds, max_message_bytes, dedup_window_seconds)
    VALUES (p_account, p_name, q.visibility_timeout_seconds, q.max_receive_count, q.delay_seconds,
            q.retention_seconds, q.max_message_bytes, q.dedup_window_seconds)
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

CREATE OR REPLACE FUNCTION sweep() RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    total bigint := 0;
    n bigint;
    moved_to_dlq bigint[];
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
    ), ins AS (
        INSERT INTO dead_letters (queue_id, sequence, body, headers, receive_count, created_at, expires_at, reason, last_error)
        SELECT queue_id, sequence, body, headers, receive_count, created_at, expires_at, 'max_receive_count', last_error
          FROM moved
        ON CONFLICT (queue_id, sequence) DO NOTHING
        RETURNING queue_id
    )
    SELECT array_agg(queue_id) INTO moved_to_dlq FROM ins;
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
BEGIN
    qid := queue_id(p_account, p_queue);
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

DROP FUNCTION dead_letter_headers(jsonb, text, bigint, text, text, integer);
ALTER TABLE queues DROP COLUMN dead_letter_queue_id;
