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
