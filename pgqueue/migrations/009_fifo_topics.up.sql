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
