-- Topics, complete: subscription filters on headers, publishing with a
-- delay and in batches, deleting and listing topics from SQL. Applied like
-- 001 (search_path set to the target schema).
--
-- A subscription may carry a filter: a JSON object of 1 to 10 header keys,
-- each mapped to a string. A published message is copied into the queue
-- only when its headers hold every key with exactly that string value
-- (headers @> filter), like an SNS filter policy reduced to exact matches.
-- No filter (NULL) takes every message.

ALTER TABLE subscriptions ADD COLUMN filter jsonb
    CHECK (filter IS NULL OR jsonb_typeof(filter) = 'object');

-- Who made the subscription: 'api' (anyone) or 'manifest' (sluice deploy,
-- which removes the subscriptions it made that left the manifest).
ALTER TABLE subscriptions ADD COLUMN source text NOT NULL DEFAULT 'api'
    CHECK (source IN ('api', 'manifest'));

-- Check a subscription filter; '{}' and NULL mean no filter (NULL).
CREATE FUNCTION check_filter(p_filter jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE SET search_path FROM CURRENT AS $$
DECLARE
    k text;
    v jsonb;
    n integer := 0;
BEGIN
    IF p_filter IS NULL OR jsonb_typeof(p_filter) = 'null' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(p_filter) <> 'object' THEN
        PERFORM raise_error('SQ005', 'invalid subscription filter: use a JSON object of header names to strings, e.g. {"type": "order"}');
    END IF;
    FOR k, v IN SELECT key, value FROM jsonb_each(p_filter) LOOP
        n := n + 1;
        IF jsonb_typeof(v) <> 'string' THEN
            PERFORM raise_error('SQ005', format('invalid subscription filter: header %s must map to a string, not %s', to_json(k)::text, jsonb_typeof(v)));
        END IF;
        IF length(k) < 1 OR length(k) > 128 THEN
            PERFORM raise_error('SQ005', 'invalid subscription filter: header names are 1 to 128 characters');
        END IF;
    END LOOP;
    IF n > 10 THEN
        PERFORM out_of_range('subscription filter keys', n, 0, 10);
    END IF;
    IF n = 0 THEN
        RETURN NULL;
    END IF;
    RETURN p_filter;
END
$$;

-- Subscribing again replaces the filter (NULL: none) and the source.
DROP FUNCTION subscribe(text, text);
DROP FUNCTION account_subscribe(text, text, text);
CREATE FUNCTION account_subscribe(p_account text, p_topic text, p_queue text, p_filter jsonb DEFAULT NULL,
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
    f := check_filter(p_filter);
    IF p_source IS NULL OR p_source NOT IN ('api', 'manifest') THEN
        PERFORM raise_error('SQ005', format('invalid subscription source %s: use api or manifest', coalesce(to_json(p_source)::text, 'NULL')));
    END IF;
    INSERT INTO subscriptions AS s (topic_id, queue_id, filter, source) VALUES (tid, qid, f, p_source)
    ON CONFLICT (topic_id, queue_id) DO UPDATE SET filter = excluded.filter, source = excluded.source;
END
$$;

-- Copy one message into every subscribed queue whose filter its headers
-- match. Each copy gets its own sequence and is delayed by the larger of
-- p_delay_seconds and its queue's delay_seconds. Returns the copies made.
CREATE FUNCTION publish_message(p_account text, p_topic text, p_body jsonb, p_headers jsonb,
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

CREATE OR REPLACE FUNCTION account_publish(p_account text, p_topic text, p_body jsonb, p_headers jsonb DEFAULT NULL) RETURNS integer
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN publish_message(p_account, p_topic, p_body, p_headers, 0);
END
$$;

-- Publish many messages in one transaction: p_headers and p_delays are
-- optional per-message arrays (NULL or shorter = no headers, and
-- p_delay_seconds). Returns the copies made per message, in order.
CREATE FUNCTION account_publish_batch(p_account text, p_topic text, p_bodies jsonb[],
                                      p_headers jsonb[] DEFAULT NULL, p_delay_seconds integer DEFAULT 0,
                                      p_delays integer[] DEFAULT NULL)
RETURNS SETOF integer
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    i integer;
BEGIN
    IF p_bodies IS NULL OR cardinality(p_bodies) = 0 THEN
        PERFORM raise_error('SQ005', 'invalid batch: give 1 or more bodies');
    END IF;
    FOR i IN 1 .. cardinality(p_bodies) LOOP
        RETURN NEXT publish_message(p_account, p_topic, p_bodies[i], p_headers[i],
                                    coalesce(p_delays[i], p_delay_seconds));
    END LOOP;
END
$$;

-- The account's topics with their subscriptions: one row per subscription,
-- and one row with queue NULL for a topic without any; by topic, then queue.
CREATE FUNCTION account_list_topics(p_account text)
RETURNS TABLE (topic text, created_at timestamptz, queue text, filter jsonb, source text)
LANGUAGE sql STABLE SET search_path FROM CURRENT AS $$
    SELECT t.name, t.created_at, q.name, s.filter, s.source
      FROM topics t
      LEFT JOIN subscriptions s ON s.topic_id = t.id
      LEFT JOIN queues q ON q.id = s.queue_id
     WHERE t.account = p_account
     ORDER BY t.name, q.name NULLS FIRST;
$$;

-- Default-account forms.

CREATE FUNCTION subscribe(topic text, queue text, filter jsonb DEFAULT NULL) RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_subscribe('000000000001', subscribe.topic, subscribe.queue, subscribe.filter);
END;

CREATE FUNCTION delete_topic(name text) RETURNS boolean
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_delete_topic('000000000001', delete_topic.name);
END;

CREATE FUNCTION publish_batch(topic text, bodies jsonb[], delay_seconds integer DEFAULT 0) RETURNS SETOF integer
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_publish_batch('000000000001', publish_batch.topic, publish_batch.bodies, NULL, publish_batch.delay_seconds);
END;

CREATE FUNCTION list_topics() RETURNS TABLE (topic text, created_at timestamptz, queue text, filter jsonb, source text)
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT * FROM account_list_topics('000000000001');
END;
