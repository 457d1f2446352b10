-- Sluice queue core: accounts, queues, messages, dead letters, dedup keys,
-- topics, the SQL API and the queue_stats view.
--
-- This file is applied by pgqueue/migrate with search_path set to the target
-- schema (sluice by default), so every name below is unqualified. Functions
-- pin that search_path with SET search_path FROM CURRENT, so they keep
-- working whatever the caller's search_path is.
--
-- Errors are raised with SQLSTATE codes in class SQ, which the Go API maps to
-- typed errors:
--   SQ001 queue not found      SQ002 queue exists        SQ003 invalid name
--   SQ004 message too large    SQ005 invalid argument    SQ006 stale receipt
--   SQ007 message not found    SQ008 topic not found     SQ009 topic exists
--   SQ010 account not found    SQ011 account exists

---------------------------------------------------------------------------
-- Tables
---------------------------------------------------------------------------

CREATE TABLE accounts (
    number     text        PRIMARY KEY CHECK (number ~ '^[0-9]{12}$'),
    name       text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);

INSERT INTO accounts (number, name) VALUES ('000000000001', 'default');

CREATE TABLE queues (
    id                         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account                    text        NOT NULL REFERENCES accounts (number),
    name                       text        NOT NULL CHECK (name ~ '^[A-Za-z0-9_-]{1,80}$'),
    visibility_timeout_seconds integer     NOT NULL DEFAULT 30,
    max_receive_count          integer     NOT NULL DEFAULT 5,
    delay_seconds              integer     NOT NULL DEFAULT 0,
    retention_seconds          integer     NOT NULL DEFAULT 345600,
    max_message_bytes          integer     NOT NULL DEFAULT 262144,
    dedup_window_seconds       integer     NOT NULL DEFAULT 300,
    created_at                 timestamptz NOT NULL DEFAULT now(),
    updated_at                 timestamptz NOT NULL DEFAULT now(),
    UNIQUE (account, name)
);

-- One global sequence gives every message a number that increases within
-- its queue (with gaps) without a per-queue counter row that every sender
-- would have to lock. CACHE 1 keeps the numbers increasing across sessions.
CREATE SEQUENCE message_sequence AS bigint;

-- Messages. No foreign key to queues: a key-share lock on the queue row per
-- insert costs throughput; queue deletion removes the messages itself.
-- visible_at is both the delay and the lease: a message is ready when
-- visible_at <= now() and receive_count < the queue's max_receive_count.
-- final_lease marks the lease of the last allowed delivery: the sweeper
-- moves those messages to dead_letters once visible_at passes.
CREATE TABLE messages (
    queue_id      bigint      NOT NULL,
    sequence      bigint      NOT NULL DEFAULT nextval('message_sequence'),
    visible_at    timestamptz NOT NULL,
    receive_count integer     NOT NULL DEFAULT 0,
    final_lease   boolean     NOT NULL DEFAULT false,
    receipt       uuid,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    body          jsonb       NOT NULL,
    headers       jsonb,
    last_error    text,
    PRIMARY KEY (queue_id, sequence)
) WITH (
    fillfactor = 90,
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_vacuum_cost_delay = 0,
    autovacuum_analyze_scale_factor = 0.02
);

-- Receive walks this index in (visible_at, sequence) order within a queue.
CREATE INDEX messages_ready ON messages (queue_id, visible_at, sequence);
-- The sweeper finds expired last leases and expired messages here; both
-- indexes only hold the few rows they are about.
CREATE INDEX messages_final_lease ON messages (visible_at) WHERE final_lease;
CREATE INDEX messages_expiring ON messages (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE dead_letters (
    queue_id      bigint      NOT NULL,
    sequence      bigint      NOT NULL,
    body          jsonb       NOT NULL,
    headers       jsonb,
    receive_count integer     NOT NULL,
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz,
    failed_at     timestamptz NOT NULL DEFAULT now(),
    reason        text        NOT NULL,
    last_error    text,
    PRIMARY KEY (queue_id, sequence)
);

CREATE INDEX dead_letters_failed_at ON dead_letters (queue_id, failed_at, sequence);

-- Deduplication keys live for the queue's dedup window after the first send.
CREATE TABLE dedup_keys (
    queue_id   bigint      NOT NULL,
    dedup_key  text        NOT NULL,
    sequence   bigint      NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (queue_id, dedup_key)
) WITH (autovacuum_vacuum_scale_factor = 0.02);

CREATE INDEX dedup_keys_expires_at ON dedup_keys (expires_at);

CREATE TABLE topics (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account    text        NOT NULL REFERENCES accounts (number),
    name       text        NOT NULL CHECK (name ~ '^[A-Za-z0-9_-]{1,80}$'),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (account, name)
);

CREATE TABLE subscriptions (
    topic_id   bigint      NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    queue_id   bigint      NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic_id, queue_id)
);

CREATE INDEX subscriptions_queue_id ON subscriptions (queue_id);

-- Queues some process is long-polling on. Senders NOTIFY only for these, so
-- a busy queue nobody waits on pays nothing for NOTIFY (whose commit-time
-- lock would serialize every sending transaction). Rows are hints, kept
-- fresh by pgqueue.Listener; losing them on a crash is harmless.
CREATE UNLOGGED TABLE wake_interest (
    queue_id bigint      PRIMARY KEY,
    until    timestamptz NOT NULL
);

---------------------------------------------------------------------------
-- Row types returned by the API
---------------------------------------------------------------------------

CREATE TYPE received_message AS (
    sequence      bigint,
    body          jsonb,
    headers       jsonb,
    receive_count integer,
    created_at    timestamptz,
    visible_at    timestamptz,
    receipt       uuid
);

CREATE TYPE dead_letter AS (
    sequence      bigint,
    body          jsonb,
    headers       jsonb,
    receive_count integer,
    created_at    timestamptz,
    failed_at     timestamptz,
    reason        text,
    last_error    text
);

---------------------------------------------------------------------------
-- Errors and validation
---------------------------------------------------------------------------

CREATE FUNCTION raise_error(p_code text, p_message text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = p_code, MESSAGE = p_message;
END
$$;

CREATE FUNCTION out_of_range(p_what text, p_value bigint, p_min bigint, p_max bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'SQ005',
        MESSAGE = format('invalid %s %s: use %s to %s', p_what, coalesce(p_value::text, 'NULL'), p_min, p_max);
END
$$;

CREATE FUNCTION check_name(p_kind text, p_name text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF p_name IS NULL OR p_name !~ '^[A-Za-z0-9_-]{1,80}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'SQ003',
            MESSAGE = format('invalid %s name %s: use 1-80 characters from A-Z a-z 0-9 _ -',
                             p_kind, coalesce(to_json(p_name)::text, 'NULL'));
    END IF;
END
$$;

CREATE FUNCTION queue_not_found(p_account text, p_queue text) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM check_name('queue', p_queue);
    RAISE EXCEPTION USING ERRCODE = 'SQ001',
        MESSAGE = format('queue %s not found in account %s', to_json(p_queue)::text, p_account);
END
$$;

-- The id of a queue, raising SQ001 (or SQ003 for a bad name) when missing.
CREATE FUNCTION queue_id(p_account text, p_queue text) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
BEGIN
    SELECT id INTO qid FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    RETURN qid;
END
$$;

-- Wake long-polling receivers of a queue, if any process registered
-- interest in it (see wake_interest).
CREATE FUNCTION wake(p_queue_id bigint, p_account text, p_queue text) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM wake_interest w WHERE w.queue_id = p_queue_id AND w.until > now()) THEN
        PERFORM pg_notify(current_schema() || '_wake', p_account || '/' || p_queue);
    END IF;
END
$$;

CREATE FUNCTION topic_not_found(p_account text, p_topic text) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM check_name('topic', p_topic);
    RAISE EXCEPTION USING ERRCODE = 'SQ008',
        MESSAGE = format('topic %s not found in account %s', to_json(p_topic)::text, p_account);
END
$$;

CREATE FUNCTION too_large(p_queue text, p_bytes bigint, p_max integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'SQ004',
        MESSAGE = format('message too large: body is %s bytes, queue %s allows at most %s bytes (max_message_bytes)',
                         p_bytes, to_json(p_queue)::text, p_max);
END
$$;

-- Raise the error for a NULL or oversized body at batch position p_ord
-- (1-based); typed jsonb so it can stand in a CASE on the error path.
CREATE FUNCTION bad_body(p_queue text, p_body jsonb, p_ord bigint, p_max integer) RETURNS jsonb
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF p_body IS NULL THEN
        PERFORM raise_error('SQ005', format('invalid body NULL at batch index %s: use a JSON value', p_ord - 1));
    END IF;
    PERFORM too_large(p_queue, octet_length(p_body::text), p_max);
    RETURN p_body;
END
$$;

-- Merge an options object into a queue row, validating every key.
CREATE FUNCTION apply_queue_options(q queues, p_options jsonb) RETURNS queues
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

---------------------------------------------------------------------------
-- Accounts and queues (account-explicit forms)
---------------------------------------------------------------------------

CREATE FUNCTION create_account(p_number text, p_name text DEFAULT '') RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF p_number IS NULL OR p_number !~ '^[0-9]{12}$' THEN
        PERFORM raise_error('SQ003', format('invalid account number %s: use exactly 12 digits', coalesce(to_json(p_number)::text, 'NULL')));
    END IF;
    INSERT INTO accounts (number, name) VALUES (p_number, coalesce(p_name, ''));
EXCEPTION WHEN unique_violation THEN
    PERFORM raise_error('SQ011', format('account %s already exists', p_number));
END
$$;

CREATE FUNCTION account_create_queue(p_account text, p_name text, p_options jsonb DEFAULT '{}') RETURNS queues
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

CREATE FUNCTION account_update_queue(p_account text, p_name text, p_options jsonb) RETURNS queues
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

CREATE FUNCTION account_delete_queue(p_account text, p_name text) RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
BEGIN
    DELETE FROM queues WHERE account = p_account AND name = p_name RETURNING id INTO qid;
    IF NOT FOUND THEN
        PERFORM check_name('queue', p_name);
        RETURN false;
    END IF;
    DELETE FROM messages WHERE queue_id = qid;
    DELETE FROM dead_letters WHERE queue_id = qid;
    DELETE FROM dedup_keys WHERE queue_id = qid;
    DELETE FROM wake_interest WHERE queue_id = qid;
    RETURN true;
END
$$;

---------------------------------------------------------------------------
-- Sending
---------------------------------------------------------------------------

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

-- Send many messages in one statement. p_headers, p_delays, p_expires_in and
-- p_dedup_keys are optional per-message arrays (NULL or shorter = default).
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

---------------------------------------------------------------------------
-- Receiving and settling
---------------------------------------------------------------------------

CREATE FUNCTION account_receive(p_account text, p_queue text, p_max_messages integer DEFAULT 1,
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

-- Delete one message. With a receipt, the delete is fenced: a receipt that
-- is not the message's current one raises SQ006 and changes nothing.
CREATE FUNCTION account_delete(p_account text, p_queue text, p_sequence bigint, p_receipt uuid DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
    current_receipt uuid;
BEGIN
    SELECT id INTO qid FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_receipt IS NULL THEN
        DELETE FROM messages WHERE queue_id = qid AND sequence = p_sequence;
        RETURN FOUND;
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
$$;

-- Acknowledge many messages in one statement; returns the sequences that
-- were deleted. Entries whose receipt (when given) is stale are skipped.
CREATE FUNCTION account_ack(p_account text, p_queue text, p_sequences bigint[], p_receipts uuid[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
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
$$;

-- Change the visibility of one message, optionally fenced by receipt.
CREATE FUNCTION account_set_visibility(p_account text, p_queue text, p_sequence bigint, p_seconds integer,
                                       p_receipt uuid DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
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
$$;

-- Negative acknowledgement of many messages: each becomes visible again
-- after its delay (NULL = now) and records its error (NULL keeps the last
-- one). Returns the sequences updated; stale receipts are skipped. A message
-- on its last lease moves to the DLQ when the new lease expires.
CREATE FUNCTION account_nack(p_account text, p_queue text, p_sequences bigint[], p_receipts uuid[] DEFAULT NULL,
                             p_delays integer[] DEFAULT NULL, p_errors text[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
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
$$;

-- Fail many messages permanently: they move to the DLQ at once with the
-- given reason (default 'permanent_failure') and error. Returns the
-- sequences moved; stale receipts are skipped.
CREATE FUNCTION account_fail(p_account text, p_queue text, p_sequences bigint[], p_receipts uuid[] DEFAULT NULL,
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
    )
    SELECT moved.sequence FROM moved;
END
$$;

CREATE FUNCTION account_peek(p_account text, p_queue text, p_max_messages integer DEFAULT 10)
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

CREATE FUNCTION account_purge(p_account text, p_queue text) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
    n bigint;
BEGIN
    qid := queue_id(p_account, p_queue);
    DELETE FROM messages WHERE queue_id = qid;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

---------------------------------------------------------------------------
-- Dead-letter queue
---------------------------------------------------------------------------

-- Read the oldest dead letters (failed first, first out). Dead letters have
-- no leases: reading does not hide them; delete_dlq or redrive settles them.
CREATE FUNCTION account_receive_dlq(p_account text, p_queue text, p_max_messages integer DEFAULT 10)
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

CREATE FUNCTION account_delete_dlq(p_account text, p_queue text, p_sequence bigint) RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
BEGIN
    qid := queue_id(p_account, p_queue);
    DELETE FROM dead_letters WHERE queue_id = qid AND sequence = p_sequence;
    RETURN FOUND;
END
$$;

CREATE FUNCTION account_purge_dlq(p_account text, p_queue text) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
    n bigint;
BEGIN
    qid := queue_id(p_account, p_queue);
    DELETE FROM dead_letters WHERE queue_id = qid;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- Move dead letters (oldest failure first, at most p_max_messages, NULL =
-- all) back into their queue, ready now with receive_count reset to 0. They
-- keep their sequence, body, headers and created_at.
CREATE FUNCTION account_redrive(p_account text, p_queue text, p_max_messages integer DEFAULT NULL) RETURNS bigint
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

---------------------------------------------------------------------------
-- Topics
---------------------------------------------------------------------------

CREATE FUNCTION account_create_topic(p_account text, p_name text) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM check_name('topic', p_name);
    PERFORM 1 FROM accounts WHERE number = p_account;
    IF NOT FOUND THEN
        PERFORM raise_error('SQ010', format('account %s not found', coalesce(to_json(p_account)::text, 'NULL')));
    END IF;
    INSERT INTO topics (account, name) VALUES (p_account, p_name);
EXCEPTION WHEN unique_violation THEN
    PERFORM raise_error('SQ009', format('topic %s already exists in account %s', to_json(p_name)::text, p_account));
END
$$;

CREATE FUNCTION account_delete_topic(p_account text, p_name text) RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM topics WHERE account = p_account AND name = p_name;
    IF NOT FOUND THEN
        PERFORM check_name('topic', p_name);
        RETURN false;
    END IF;
    RETURN true;
END
$$;

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

CREATE FUNCTION account_unsubscribe(p_account text, p_topic text, p_queue text) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    tid bigint;
    qid bigint;
BEGIN
    SELECT id INTO tid FROM topics WHERE account = p_account AND name = p_topic;
    IF NOT FOUND THEN PERFORM topic_not_found(p_account, p_topic); END IF;
    qid := queue_id(p_account, p_queue);
    DELETE FROM subscriptions WHERE topic_id = tid AND queue_id = qid;
END
$$;

-- Copy a message into every queue subscribed to the topic, in this one
-- transaction. Each copy gets its own sequence and honours its queue's
-- delay_seconds. Returns the number of copies.
CREATE FUNCTION account_publish(p_account text, p_topic text, p_body jsonb, p_headers jsonb DEFAULT NULL) RETURNS integer
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

---------------------------------------------------------------------------
-- Sweeper
---------------------------------------------------------------------------

-- One sweep: move messages whose last allowed lease expired to the DLQ
-- (reason 'max_receive_count', last_error kept), delete expired messages
-- (TTL) and messages and dead letters past retention, and forget expired
-- dedup keys. Each step handles at most 10,000 rows per call. Only one
-- session sweeps a schema at a time; concurrent callers return 0 at once.
-- Returns the number of messages moved or removed.
CREATE FUNCTION sweep() RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    total bigint := 0;
    n bigint;
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
    )
    INSERT INTO dead_letters (queue_id, sequence, body, headers, receive_count, created_at, expires_at, reason, last_error)
    SELECT queue_id, sequence, body, headers, receive_count, created_at, expires_at, 'max_receive_count', last_error
      FROM moved
    ON CONFLICT (queue_id, sequence) DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
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

---------------------------------------------------------------------------
-- Statistics
---------------------------------------------------------------------------

-- Per-queue counts. inflight counts received messages whose lease has not
-- expired (including retries waiting out a nack delay); delayed counts
-- never-received messages whose delay has not passed.
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

---------------------------------------------------------------------------
-- The SQL API on the default account (000000000001), as named in DESIGN.md.
-- BEGIN ATOMIC bodies bind their names when created, so these wrappers need
-- no pinned search_path.
---------------------------------------------------------------------------

CREATE FUNCTION create_queue(name text, options jsonb DEFAULT '{}') RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_create_queue('000000000001', create_queue.name, create_queue.options);
END;

CREATE FUNCTION update_queue(name text, options jsonb) RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_update_queue('000000000001', update_queue.name, update_queue.options);
END;

CREATE FUNCTION delete_queue(name text) RETURNS boolean
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_delete_queue('000000000001', delete_queue.name);
END;

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

CREATE FUNCTION receive(queue text, max_messages integer DEFAULT 1, visibility_timeout_seconds integer DEFAULT NULL)
RETURNS SETOF received_message
LANGUAGE sql
BEGIN ATOMIC
    SELECT * FROM account_receive('000000000001', receive.queue, receive.max_messages,
                                  receive.visibility_timeout_seconds);
END;

CREATE FUNCTION delete(queue text, sequence bigint) RETURNS boolean
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_delete('000000000001', delete.queue, delete.sequence);
END;

CREATE FUNCTION set_visibility(queue text, sequence bigint, seconds integer) RETURNS boolean
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_set_visibility('000000000001', set_visibility.queue, set_visibility.sequence, set_visibility.seconds);
END;

CREATE FUNCTION peek(queue text, max_messages integer DEFAULT 10) RETURNS SETOF received_message
LANGUAGE sql
BEGIN ATOMIC
    SELECT * FROM account_peek('000000000001', peek.queue, peek.max_messages);
END;

CREATE FUNCTION purge(queue text) RETURNS bigint
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_purge('000000000001', purge.queue);
END;

CREATE FUNCTION receive_dlq(queue text, max_messages integer DEFAULT 10) RETURNS SETOF dead_letter
LANGUAGE sql
BEGIN ATOMIC
    SELECT * FROM account_receive_dlq('000000000001', receive_dlq.queue, receive_dlq.max_messages);
END;

CREATE FUNCTION delete_dlq(queue text, sequence bigint) RETURNS boolean
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_delete_dlq('000000000001', delete_dlq.queue, delete_dlq.sequence);
END;

CREATE FUNCTION purge_dlq(queue text) RETURNS bigint
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_purge_dlq('000000000001', purge_dlq.queue);
END;

CREATE FUNCTION redrive(queue text, max_messages integer DEFAULT NULL) RETURNS bigint
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_redrive('000000000001', redrive.queue, redrive.max_messages);
END;

CREATE FUNCTION create_topic(name text) RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_create_topic('000000000001', create_topic.name);
END;

CREATE FUNCTION subscribe(topic text, queue text) RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_subscribe('000000000001', subscribe.topic, subscribe.queue);
END;

CREATE FUNCTION unsubscribe(topic text, queue text) RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_unsubscribe('000000000001', unsubscribe.topic, unsubscribe.queue);
END;

CREATE FUNCTION publish(topic text, body jsonb, headers jsonb DEFAULT NULL) RETURNS integer
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_publish('000000000001', publish.topic, publish.body, publish.headers);
END;
