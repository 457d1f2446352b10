-- Ordered groups (FIFO). A message may carry a group key; within a group
-- messages are delivered in sequence order and at most one of them is in
-- flight at a time. A queue with fifo = true requires a group on every send.
--
-- How it works (docs/ordered.md has the user's view, RATIONALE.md the
-- alternatives measured):
--
--  * message_groups holds one row per (queue, group) with the number of
--    messages the group has. Its row lock serializes the sends to one group
--    and the hand-over from one message to the next, nothing else.
--  * Only the head of a group (its oldest message) is ever receivable.
--    Every other message of the group is "parked": visible_at = 'infinity'
--    and its own visibility time kept in ready_at. Receive is unchanged: it
--    walks messages_ready up to now(), so parked messages (at the far end
--    of that index) are never visited, whatever the backlog; a hot group
--    shows receive one message at a time and cannot crowd out others.
--  * When a head leaves the queue (ack, delete, fail, dead-letter by the
--    sweeper, expiry, receive_delete, purge), a trigger un-parks the next
--    message of its group: visible_at = greatest(ready_at, now()).
--  * A head whose lease expires becomes ready again itself, so the group
--    waits for it (a failed message blocks its group until it succeeds or
--    is dead-lettered; then the group goes on with the next message, as in
--    SQS FIFO).
--
-- Messages without a group pay one partial-index predicate and two
-- trigger WHEN tests per row; nothing else changes for them.

ALTER TABLE queues ADD COLUMN fifo boolean NOT NULL DEFAULT false;

ALTER TABLE messages ADD COLUMN group_key text;
ALTER TABLE messages ADD COLUMN ready_at timestamptz;
ALTER TABLE dead_letters ADD COLUMN group_key text;

-- Finds the next message of a group when its head leaves.
CREATE INDEX messages_group ON messages (queue_id, group_key, sequence) WHERE group_key IS NOT NULL;

CREATE TABLE message_groups (
    queue_id  bigint NOT NULL,
    group_key text   NOT NULL,
    size      bigint NOT NULL,
    PRIMARY KEY (queue_id, group_key)
) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.02);

---------------------------------------------------------------------------
-- Triggers that keep one receivable head per group
---------------------------------------------------------------------------

-- A grouped message joins its group: the first message of an empty group is
-- its head; any other is parked until the messages before it are gone.
-- The message takes its sequence only now, under the group's row lock, so
-- that within a group sequence order is the order in which the sends took
-- the lock (and committed): the head always has the group's lowest
-- sequence, and a redriven dead letter rejoins at the end of its group.
CREATE FUNCTION group_enter() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    n bigint;
BEGIN
    IF length(NEW.group_key) < 1 OR length(NEW.group_key) > 128 THEN
        PERFORM out_of_range('group length', length(NEW.group_key), 1, 128);
    END IF;
    INSERT INTO message_groups AS g (queue_id, group_key, size)
    VALUES (NEW.queue_id, NEW.group_key, 1)
    ON CONFLICT (queue_id, group_key) DO UPDATE SET size = g.size + 1
    RETURNING g.size INTO n;
    NEW.sequence := nextval('message_sequence');
    IF n > 1 THEN
        NEW.ready_at := NEW.visible_at;
        NEW.visible_at := 'infinity';
    END IF;
    RETURN NEW;
END
$$;

-- A grouped message left the queue: when it was the head, the next message
-- of its group (the lowest sequence above the head's) becomes receivable.
-- Looking above the head's sequence starts the index scan past the
-- group's earlier, deleted messages, whose index entries stay until a
-- vacuum; from the group's start, a long group would walk them all. A
-- dead letter keeps the group key so that a redrive puts it back into its
-- group.
CREATE FUNCTION group_leave() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    n bigint;
    next_at timestamptz;
    q record;
BEGIN
    UPDATE message_groups SET size = size - 1
     WHERE queue_id = OLD.queue_id AND group_key = OLD.group_key
    RETURNING size INTO n;
    IF n IS NULL THEN
        RETURN NULL; -- no such group (not expected: every grouped insert counts in)
    END IF;
    UPDATE dead_letters SET group_key = OLD.group_key
     WHERE queue_id = OLD.queue_id AND sequence = OLD.sequence AND group_key IS NULL;
    IF n <= 0 THEN
        DELETE FROM message_groups WHERE queue_id = OLD.queue_id AND group_key = OLD.group_key AND size <= 0;
        RETURN NULL;
    END IF;
    IF OLD.visible_at = 'infinity' THEN
        RETURN NULL; -- a parked message left; the head is unchanged
    END IF;
    UPDATE messages m
       SET visible_at = greatest(m.ready_at, now()), ready_at = NULL
     WHERE m.queue_id = OLD.queue_id
       AND m.sequence = (SELECT p.sequence FROM messages p
                          WHERE p.queue_id = OLD.queue_id AND p.group_key = OLD.group_key
                            AND p.sequence > OLD.sequence
                          ORDER BY p.sequence LIMIT 1)
       AND m.visible_at = 'infinity'
    RETURNING m.visible_at INTO next_at;
    -- Wake long-polling receivers (as wake() does, looking the queue's
    -- name up only when someone listens).
    IF next_at IS NOT NULL AND next_at <= now()
       AND EXISTS (SELECT 1 FROM wake_interest w WHERE w.queue_id = OLD.queue_id AND w.until > now()) THEN
        SELECT account, name INTO q FROM queues WHERE id = OLD.queue_id;
        IF FOUND THEN
            PERFORM pg_notify(current_schema() || '_wake', q.account || '/' || q.name);
        END IF;
    END IF;
    RETURN NULL;
END
$$;

-- A parked message keeps waiting for its group: a visibility change or a
-- nack by sequence does not make it receivable (only group_leave does).
CREATE FUNCTION group_keep_parked() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RETURN NULL;
END
$$;

CREATE TRIGGER messages_group_enter BEFORE INSERT ON messages
    FOR EACH ROW WHEN (NEW.group_key IS NOT NULL) EXECUTE FUNCTION group_enter();
CREATE TRIGGER messages_group_leave AFTER DELETE ON messages
    FOR EACH ROW WHEN (OLD.group_key IS NOT NULL) EXECUTE FUNCTION group_leave();
CREATE TRIGGER messages_group_keep_parked BEFORE UPDATE ON messages
    FOR EACH ROW WHEN (OLD.visible_at = 'infinity' AND NEW.visible_at <> 'infinity' AND NEW.ready_at IS NOT NULL)
    EXECUTE FUNCTION group_keep_parked();

---------------------------------------------------------------------------
-- Queue option fifo
---------------------------------------------------------------------------

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
        IF k = 'fifo' THEN
            IF jsonb_typeof(v) NOT IN ('boolean', 'null') THEN
                PERFORM raise_error('SQ005', format('invalid queue option fifo = %s: use true or false', v::text));
            END IF;
            q.fifo := coalesce((v #>> '{}')::boolean, false);
            CONTINUE;
        END IF;
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
            PERFORM raise_error('SQ005', format('unknown queue option %s: use visibility_timeout_seconds, max_receive_count, delay_seconds, retention_seconds, max_message_bytes, dedup_window_seconds, dead_letter_queue, fifo', to_json(k)::text));
        END CASE;
    END LOOP;
    RETURN q;
END
$$;

-- As in 005, with fifo.
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
    q.fifo := false;
    q := apply_queue_options(q, p_options);
    INSERT INTO queues (account, name, visibility_timeout_seconds, max_receive_count, delay_seconds,
                        retention_seconds, max_message_bytes, dedup_window_seconds, dead_letter_queue_id, fifo)
    VALUES (p_account, p_name, q.visibility_timeout_seconds, q.max_receive_count, q.delay_seconds,
            q.retention_seconds, q.max_message_bytes, q.dedup_window_seconds, q.dead_letter_queue_id, q.fifo)
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
                      fifo = q.fifo,
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

-- Refuses a send without a group to a fifo queue.
CREATE FUNCTION fifo_needs_group(p_queue text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM raise_error('SQ005', format('queue %s is a fifo queue: give every message a group key (1-128 characters)',
                                        to_json(p_queue)::text));
END
$$;

---------------------------------------------------------------------------
-- Sending with a group
---------------------------------------------------------------------------

DROP FUNCTION send(text, jsonb, integer, jsonb, integer, text);
DROP FUNCTION send_batch(text, jsonb[], integer);
DROP FUNCTION account_send(text, text, jsonb, integer, jsonb, integer, text);
DROP FUNCTION account_send_batch(text, text, jsonb[], integer, jsonb[], integer[], integer[], text[]);

CREATE FUNCTION account_send(p_account text, p_queue text, p_body jsonb, p_delay_seconds integer DEFAULT 0,
                             p_headers jsonb DEFAULT NULL, p_expires_in_seconds integer DEFAULT NULL,
                             p_dedup_key text DEFAULT NULL, p_group text DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    q queues;
    seq bigint;
    size bigint;
    got bigint;
    delay integer;
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
$$;

-- As in 001, plus p_groups: an optional per-message array of group keys
-- (NULL or shorter = no group). Messages of one group in one batch keep
-- the batch's order.
CREATE FUNCTION account_send_batch(p_account text, p_queue text, p_bodies jsonb[], p_delay_seconds integer DEFAULT 0,
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

-- As in 004, plus "group": a string of 1 to 128 characters.
CREATE OR REPLACE FUNCTION account_send_entries(p_account text, p_queue text, p_entries jsonb) RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    n integer;
    e jsonb;
    i integer := 0;
    k text;
    h jsonb;
    bodies jsonb[] := '{}';
    headers jsonb[] := '{}';
    delays integer[] := '{}';
    expires integer[] := '{}';
    keys text[] := '{}';
    groups text[] := '{}';
    any_group boolean := false;
BEGIN
    PERFORM queue_id(p_account, p_queue);
    IF p_entries IS NULL OR jsonb_typeof(p_entries) <> 'array' THEN
        PERFORM raise_error('SQ005', 'invalid entries: use a JSON array of 1 to 1000 objects like {"body": {...}}');
    END IF;
    n := jsonb_array_length(p_entries);
    IF n < 1 OR n > 1000 THEN
        PERFORM out_of_range('number of entries', n, 1, 1000);
    END IF;
    FOR e IN SELECT value FROM jsonb_array_elements(p_entries) LOOP
        IF jsonb_typeof(e) <> 'object' THEN
            PERFORM raise_error('SQ005', format('invalid entries[%s]: use an object like {"body": {...}}', i));
        END IF;
        FOR k IN SELECT jsonb_object_keys(e) LOOP
            IF k NOT IN ('body', 'headers', 'delay_seconds', 'expires_in_seconds', 'dedup_key', 'group') THEN
                PERFORM raise_error('SQ005', format('unknown field %s in entries[%s]: use body, headers, delay_seconds, expires_in_seconds, dedup_key, group',
                                                    to_json(k)::text, i));
            END IF;
        END LOOP;
        IF e -> 'body' IS NULL OR jsonb_typeof(e -> 'body') = 'null' THEN
            PERFORM raise_error('SQ005', format('entries[%s] has no body: give "body", any JSON value but null', i));
        END IF;
        h := e -> 'headers';
        IF h IS NOT NULL AND jsonb_typeof(h) = 'null' THEN
            h := NULL;
        END IF;
        IF h IS NOT NULL AND (jsonb_typeof(h) <> 'object'
                              OR EXISTS (SELECT 1 FROM jsonb_each(h) x WHERE jsonb_typeof(x.value) <> 'string')) THEN
            PERFORM raise_error('SQ005', format('invalid entries[%s].headers: use a JSON object of string values like {"k": "v"}', i));
        END IF;
        IF e ? 'dedup_key' AND jsonb_typeof(e -> 'dedup_key') NOT IN ('string', 'null') THEN
            PERFORM raise_error('SQ005', format('invalid entries[%s].dedup_key: use a string of 1 to 128 characters', i));
        END IF;
        IF length(e ->> 'dedup_key') NOT BETWEEN 1 AND 128 THEN
            PERFORM raise_error('SQ005', format('invalid entries[%s].dedup_key: use a string of 1 to 128 characters, got %s',
                                                i, length(e ->> 'dedup_key')));
        END IF;
        IF (e ? 'group' AND jsonb_typeof(e -> 'group') NOT IN ('string', 'null'))
           OR length(e ->> 'group') NOT BETWEEN 1 AND 128 THEN
            PERFORM raise_error('SQ005', format('invalid entries[%s].group: use a string of 1 to 128 characters', i));
        END IF;
        bodies := array_append(bodies, e -> 'body');
        headers := array_append(headers, h);
        delays := array_append(delays, entry_int(e, 'delay_seconds', i, 0, 43200));
        expires := array_append(expires, entry_int(e, 'expires_in_seconds', i, 1, 1209600));
        keys := array_append(keys, e ->> 'dedup_key');
        groups := array_append(groups, e ->> 'group');
        any_group := any_group OR (e ->> 'group') IS NOT NULL;
        i := i + 1;
    END LOOP;
    IF NOT any_group THEN
        groups := NULL;
    END IF;
    RETURN QUERY SELECT s FROM account_send_batch(p_account, p_queue, bodies, 0, headers, delays, expires, keys, groups) s;
END
$$;

CREATE FUNCTION send(queue text, body jsonb, delay_seconds integer DEFAULT 0, headers jsonb DEFAULT NULL,
                     expires_in_seconds integer DEFAULT NULL, dedup_key text DEFAULT NULL,
                     group_key text DEFAULT NULL) RETURNS bigint
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_send('000000000001', send.queue, send.body, send.delay_seconds, send.headers,
                        send.expires_in_seconds, send.dedup_key, send.group_key);
END;

-- group_key puts every message of the batch into that group, in array order.
CREATE FUNCTION send_batch(queue text, bodies jsonb[], delay_seconds integer DEFAULT 0,
                           group_key text DEFAULT NULL) RETURNS SETOF bigint
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_send_batch('000000000001', send_batch.queue, send_batch.bodies, send_batch.delay_seconds,
                              NULL, NULL, NULL, NULL,
                              CASE WHEN send_batch.group_key IS NULL THEN NULL
                                   ELSE array_fill(send_batch.group_key, ARRAY[cardinality(send_batch.bodies)]) END);
END;

---------------------------------------------------------------------------
-- Received and peeked messages carry their group
---------------------------------------------------------------------------

DROP FUNCTION receive(text, integer, integer);
DROP FUNCTION peek(text, integer);
DROP FUNCTION receive_delete(text, integer);

ALTER TYPE received_message ADD ATTRIBUTE group_key text;

CREATE OR REPLACE FUNCTION account_receive(p_account text, p_queue text, p_max_messages integer DEFAULT 1,
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
    -- The same claim as in 001. Parked group members have visible_at =
    -- 'infinity', beyond the index range this walks.
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
        RETURNING m.sequence, m.body, m.headers, m.receive_count, m.created_at, m.visible_at, m.receipt, m.group_key
    )
    SELECT l.sequence, l.body, l.headers, l.receive_count, l.created_at, l.visible_at, l.receipt, l.group_key
      FROM leased l
     ORDER BY l.sequence;
END
$$;

CREATE OR REPLACE FUNCTION account_receive_delete(p_account text, p_queue text, p_max_messages integer DEFAULT 1)
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
$$;

CREATE OR REPLACE FUNCTION account_peek(p_account text, p_queue text, p_max_messages integer DEFAULT 10)
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
    RETURN QUERY
    SELECT m.sequence, m.body, m.headers, m.receive_count, m.created_at, m.visible_at, NULL::uuid, m.group_key
      FROM messages m
     WHERE m.queue_id = q.id
       AND m.visible_at <= now()
       AND m.receive_count < q.max_receive_count
       AND (m.expires_at IS NULL OR m.expires_at > now())
     ORDER BY m.visible_at, m.sequence
     LIMIT p_max_messages;
END
$$;

CREATE OR REPLACE FUNCTION account_peek_after(p_account text, p_queue text, p_after bigint, p_max_messages integer)
RETURNS SETOF received_message
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    q queues;
BEGIN
    SELECT * INTO q FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    PERFORM check_page(p_after, p_max_messages);
    RETURN QUERY
    SELECT m.sequence, m.body, m.headers, m.receive_count, m.created_at, m.visible_at, NULL::uuid, m.group_key
      FROM messages m
     WHERE m.queue_id = q.id
       AND m.sequence > p_after
       AND m.visible_at <= now()
       AND m.receive_count < q.max_receive_count
       AND (m.expires_at IS NULL OR m.expires_at > now())
     ORDER BY m.sequence
     LIMIT p_max_messages;
END
$$;

CREATE FUNCTION receive(queue text, max_messages integer DEFAULT 1, visibility_timeout_seconds integer DEFAULT NULL)
RETURNS SETOF received_message
LANGUAGE sql
BEGIN ATOMIC
    SELECT * FROM account_receive('000000000001', receive.queue, receive.max_messages,
                                  receive.visibility_timeout_seconds);
END;

CREATE FUNCTION peek(queue text, max_messages integer DEFAULT 10) RETURNS SETOF received_message
LANGUAGE sql
BEGIN ATOMIC
    SELECT * FROM account_peek('000000000001', peek.queue, peek.max_messages);
END;

CREATE FUNCTION receive_delete(queue text, max_messages integer DEFAULT 1) RETURNS SETOF received_message
LANGUAGE sql
BEGIN ATOMIC
    SELECT * FROM account_receive_delete('000000000001', receive_delete.queue, receive_delete.max_messages);
END;

---------------------------------------------------------------------------
-- Redrive puts a dead letter back into its group
---------------------------------------------------------------------------

-- A redriven message without a group keeps its sequence; one with a group
-- rejoins the end of its group with a new sequence (group_enter), as an
-- SQS FIFO redrive sends the message anew.
CREATE OR REPLACE FUNCTION account_redrive(p_account text, p_queue text, p_max_messages integer DEFAULT NULL) RETURNS bigint
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
    INSERT INTO messages (queue_id, sequence, visible_at, created_at, expires_at, body, headers, group_key)
    SELECT qid, moved.sequence, now(), moved.created_at, moved.expires_at, moved.body, moved.headers, moved.group_key
      FROM moved
     ORDER BY moved.sequence
    ON CONFLICT (queue_id, sequence) DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        PERFORM wake(qid, p_account, p_queue);
    END IF;
    RETURN n;
END
$$;

CREATE OR REPLACE FUNCTION account_redrive_sequences(p_account text, p_queue text, p_sequences bigint[]) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
    n bigint;
BEGIN
    qid := queue_id(p_account, p_queue);
    n := coalesce(cardinality(p_sequences), 0);
    IF n < 1 OR n > 1000 THEN
        PERFORM out_of_range('number of sequences', n, 1, 1000);
    END IF;
    WITH moved AS (
        DELETE FROM dead_letters d
         WHERE d.queue_id = qid AND d.sequence = ANY (p_sequences)
        RETURNING d.*
    )
    INSERT INTO messages (queue_id, sequence, visible_at, created_at, expires_at, body, headers, group_key)
    SELECT qid, moved.sequence, now(), moved.created_at, moved.expires_at, moved.body, moved.headers, moved.group_key
      FROM moved
     ORDER BY moved.sequence
    ON CONFLICT (queue_id, sequence) DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        PERFORM wake(qid, p_account, p_queue);
    END IF;
    RETURN n;
END
$$;

---------------------------------------------------------------------------
-- Statistics: parked messages are not "delayed"; group counts
---------------------------------------------------------------------------

-- grouped_waiting counts messages parked behind their group's head;
-- groups counts groups with messages; groups_inflight those whose head is
-- leased; groups_blocked those whose head failed at least once (it was
-- received and is waiting for a retry or in flight again) and holds back
-- messages behind it.
CREATE OR REPLACE VIEW queue_stats AS
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
       q.visibility_timeout_seconds,
       coalesce(s.grouped_waiting, 0) AS grouped_waiting,
       g.groups,
       coalesce(s.groups_inflight, 0) AS groups_inflight,
       coalesce(s.groups_blocked, 0) AS groups_blocked
  FROM queues q
 CROSS JOIN LATERAL (
       SELECT count(*) FILTER (WHERE m.visible_at <= now() AND m.receive_count < q.max_receive_count
                                 AND (m.expires_at IS NULL OR m.expires_at > now())) AS ready,
              count(*) FILTER (WHERE m.visible_at > now() AND m.visible_at < 'infinity' AND m.receive_count = 0) AS delayed,
              count(*) FILTER (WHERE m.visible_at > now() AND m.receive_count > 0) AS inflight,
              extract(epoch FROM now() - min(m.created_at) FILTER (
                  WHERE m.visible_at <= now() AND m.receive_count < q.max_receive_count
                    AND (m.expires_at IS NULL OR m.expires_at > now())))::double precision AS oldest_ready_age_seconds,
              count(*) AS total,
              count(*) FILTER (WHERE m.visible_at = 'infinity') AS grouped_waiting,
              count(*) FILTER (WHERE m.group_key IS NOT NULL AND m.visible_at > now() AND m.visible_at < 'infinity'
                                 AND m.receive_count > 0) AS groups_inflight,
              count(*) FILTER (WHERE m.group_key IS NOT NULL AND m.visible_at < 'infinity'
                                 AND (m.receive_count > 1 OR (m.receive_count > 0 AND m.visible_at <= now())
                                      OR m.last_error IS NOT NULL)
                                 AND EXISTS (SELECT 1 FROM message_groups mg
                                              WHERE mg.queue_id = q.id AND mg.group_key = m.group_key AND mg.size > 1)
                                 ) AS groups_blocked
         FROM messages m
        WHERE m.queue_id = q.id) s
 CROSS JOIN LATERAL (SELECT count(*) AS dlq FROM dead_letters dl WHERE dl.queue_id = q.id) d
 CROSS JOIN LATERAL (SELECT count(*) AS groups FROM message_groups mg WHERE mg.queue_id = q.id) g;

---------------------------------------------------------------------------
-- Dead letters carry their group
---------------------------------------------------------------------------

DROP FUNCTION receive_dlq(text, integer);

ALTER TYPE dead_letter ADD ATTRIBUTE group_key text;

CREATE OR REPLACE FUNCTION account_receive_dlq(p_account text, p_queue text, p_max_messages integer DEFAULT 10)
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
    SELECT d.sequence, d.body, d.headers, d.receive_count, d.created_at, d.failed_at, d.reason, d.last_error, d.group_key
      FROM dead_letters d
     WHERE d.queue_id = qid
     ORDER BY d.failed_at, d.sequence
     LIMIT p_max_messages;
END
$$;

CREATE OR REPLACE FUNCTION account_receive_dlq_after(p_account text, p_queue text, p_after bigint, p_max_messages integer)
RETURNS SETOF dead_letter
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
BEGIN
    qid := queue_id(p_account, p_queue);
    PERFORM check_page(p_after, p_max_messages);
    RETURN QUERY
    SELECT d.sequence, d.body, d.headers, d.receive_count, d.created_at, d.failed_at, d.reason, d.last_error, d.group_key
      FROM dead_letters d
     WHERE d.queue_id = qid AND d.sequence > p_after
     ORDER BY d.sequence
     LIMIT p_max_messages;
END
$$;

CREATE FUNCTION receive_dlq(queue text, max_messages integer DEFAULT 10) RETURNS SETOF dead_letter
LANGUAGE sql
BEGIN ATOMIC
    SELECT * FROM account_receive_dlq('000000000001', receive_dlq.queue, receive_dlq.max_messages);
END;
