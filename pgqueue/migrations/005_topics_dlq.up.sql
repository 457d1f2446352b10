-- Topics, complete: subscription filters on headers, publishing with a
-- delay and in batches, deleting and listing topics from SQL; and
-- dead-letter queues (the queue option dead_letter_queue, at the end).
-- Applied like 001 (search_path set to the target schema).
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

---------------------------------------------------------------------------
-- Dead-letter queues (an SQS redrive policy): a queue's dead_letter_queue
-- option names another queue of its account. Its dead letters (the sweeper
-- at the last lease's expiry, account_fail for permanent failures and
-- reject_on_error) then become new messages of that queue, in the same
-- statement, instead of rows of dead_letters (still the default). Their
-- headers gain "sluice_dead_letter": {"queue", "sequence", "reason",
-- "error", "receive_count"} naming where they died and why. A queue cannot
-- be its own dead-letter queue, nor reach itself through others' (a cycle);
-- deleting the dead-letter queue sends dead letters to the table again.
---------------------------------------------------------------------------

ALTER TABLE queues ADD COLUMN dead_letter_queue_id bigint REFERENCES queues (id) ON DELETE SET NULL;

CREATE INDEX queues_dead_letter_queue_id ON queues (dead_letter_queue_id) WHERE dead_letter_queue_id IS NOT NULL;

-- The headers of a dead letter moved into a dead-letter queue.
CREATE FUNCTION dead_letter_headers(p_headers jsonb, p_queue text, p_sequence bigint, p_reason text, p_error text,
                                    p_receive_count integer) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(p_headers, '{}'::jsonb) || jsonb_build_object('sluice_dead_letter', jsonb_build_object(
        'queue', p_queue, 'sequence', p_sequence, 'reason', p_reason, 'error', p_error, 'receive_count', p_receive_count));
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
        INSERT INTO messages (queue_id, visible_at, expires_at, body, headers)
        SELECT dlq_id, now(), expires_at, body,
               dead_letter_headers(headers, queue_name, sequence, 'max_receive_count', last_error, receive_count)
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
            INSERT INTO messages (queue_id, visible_at, expires_at, body, headers)
            SELECT dlq.id, now(), moved.expires_at, moved.body,
                   dead_letter_headers(moved.headers, p_queue, moved.sequence, moved.reason, moved.error, moved.receive_count)
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
