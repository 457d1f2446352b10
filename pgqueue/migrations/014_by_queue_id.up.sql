-- The hot path keyed by queue id, so that Citus can run it on the worker
-- holding the queue's shard (issue #19; docs/scale-out.md, "The hot path
-- on the workers").
--
-- Citus delegates a call of a distributed function to the node holding
-- the shard its distribution argument names; a function keyed by account
-- and queue *name* has no such argument. So the hot path gets functions
-- keyed by queue id: queue_send, queue_send_batch, queue_receive,
-- queue_receive_delete, queue_delete, queue_ack, queue_nack, queue_fail,
-- queue_release and queue_set_visibility. Each takes p_queue_id first,
-- then p_account and p_queue, then the arguments of its account_*
-- function. The body checks that the id is that account's queue of that
-- name (queues is a reference table on Citus: a local read on every node)
-- and raises the same error as the account_* function when it is not
-- (SQ001, or SQ003 for a bad name), e.g. when a client's cached id names
-- a queue deleted and created again since. pgqueue/citus/distribute.sql
-- distributes them by p_queue_id, co-located with messages; on plain
-- Postgres they are ordinary functions and cost what the account_* ones
-- did.
--
-- The account_* functions keep their signatures and become wrappers that
-- resolve the id and call the queue_* function, so there is one body of
-- each. queue_delete and queue_ack take p_async_commit: true sets
-- synchronous_commit off for the transaction inside the function, where
-- it applies on the node that commits the writes (a worker, when Citus
-- delegated the call); a SET LOCAL sent by the client beforehand would
-- stay on the coordinator.
--
-- No body draws message_sequence itself (the rule of 013): messages take
-- their sequence from the column's default or the marker -1, which 013's
-- triggers draw on the node holding the shard, and RETURNING gives it back.
--
-- The LANGUAGE sql wrappers on functions replaced here (send, delete,
-- set_visibility, receive_delete) are dropped and created again as
-- plpgsql, as 012 did for send_batch and receive: Citus refuses to
-- replace a function such a wrapper depends on (010).

DROP FUNCTION send(text, jsonb, integer, jsonb, integer, text, text);
DROP FUNCTION delete(text, bigint);
DROP FUNCTION set_visibility(text, bigint, integer);
DROP FUNCTION receive_delete(text, integer);

-- Send one message to queue p_queue_id (p_account's queue p_queue); as
-- account_send of 013.
CREATE FUNCTION queue_send(p_queue_id bigint, p_account text, p_queue text, p_body jsonb,
                           p_delay_seconds integer DEFAULT 0, p_headers jsonb DEFAULT NULL,
                           p_expires_in_seconds integer DEFAULT NULL, p_dedup_key text DEFAULT NULL,
                           p_group text DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    q queues;
    seq bigint;
    size bigint;
    got bigint;
    delay integer;
    -- Read once: Citus takes a parameter, not now(), in ON CONFLICT ... WHERE.
    t timestamptz := now();
BEGIN
    SELECT * INTO q FROM queues WHERE id = p_queue_id AND account = p_account AND name = p_queue;
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
        -- As in 013: the key is taken with the message's sequence, drawn by
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
$$;

-- Send a batch to queue p_queue_id; as account_send_batch of 012: the
-- common case (bodies only, queue not fifo) inline, the rest through
-- send_batch_full.
CREATE FUNCTION queue_send_batch(p_queue_id bigint, p_account text, p_queue text, p_bodies jsonb[],
                                 p_delay_seconds integer DEFAULT 0, p_headers jsonb[] DEFAULT NULL,
                                 p_delays integer[] DEFAULT NULL, p_expires_in integer[] DEFAULT NULL,
                                 p_dedup_keys text[] DEFAULT NULL, p_groups text[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qdelay integer;
    qmax integer;
    qfifo boolean;
    n integer := coalesce(cardinality(p_bodies), 0);
    visible timestamptz;
BEGIN
    SELECT delay_seconds, max_message_bytes, fifo INTO qdelay, qmax, qfifo
      FROM queues WHERE id = p_queue_id AND account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_headers IS NOT NULL OR p_delays IS NOT NULL OR p_expires_in IS NOT NULL
       OR p_dedup_keys IS NOT NULL OR p_groups IS NOT NULL THEN
        RETURN QUERY SELECT s FROM send_batch_full(p_account, p_queue, p_bodies, p_delay_seconds, p_headers,
                                                   p_delays, p_expires_in, p_dedup_keys, p_groups) s;
        RETURN;
    END IF;
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
    SELECT p_queue_id, visible,
           CASE WHEN b.body IS NULL OR octet_length(b.body::text) > qmax
                THEN bad_body(p_queue, b.body, b.ord, qmax)
                ELSE b.body END
      FROM unnest(p_bodies) WITH ORDINALITY AS b(body, ord)
    RETURNING sequence;
    -- wake(), inline: a NOTIFY only when a long poll registered interest.
    IF visible <= now() AND EXISTS (SELECT 1 FROM wake_interest w WHERE w.queue_id = p_queue_id AND w.until > now()) THEN
        PERFORM pg_notify(current_schema() || '_wake', p_account || '/' || p_queue);
    END IF;
END
$$;

-- Lease up to p_max_messages ready messages of queue p_queue_id; as
-- account_receive of 012.
CREATE FUNCTION queue_receive(p_queue_id bigint, p_account text, p_queue text, p_max_messages integer DEFAULT 1,
                              p_visibility_timeout_seconds integer DEFAULT NULL)
RETURNS SETOF received_message
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    vt integer;
    max_rc integer;
    -- One draw per call; each message's receipt is derived from it and the
    -- message's sequence, so the UPDATE calls no volatile function (010).
    lease text := gen_random_uuid()::text;
BEGIN
    SELECT coalesce(p_visibility_timeout_seconds, visibility_timeout_seconds), max_receive_count
      INTO vt, max_rc
      FROM queues WHERE id = p_queue_id AND account = p_account AND name = p_queue;
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
         WHERE m.queue_id = p_queue_id
           AND m.sequence = ANY (ARRAY(
               SELECT c.sequence
                 FROM messages c
                WHERE c.queue_id = p_queue_id
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

-- Claim and delete up to p_max_messages ready messages of queue
-- p_queue_id (at most once); as account_receive_delete of 008.
CREATE FUNCTION queue_receive_delete(p_queue_id bigint, p_account text, p_queue text, p_max_messages integer DEFAULT 1)
RETURNS SETOF received_message
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    max_rc integer;
BEGIN
    SELECT max_receive_count INTO max_rc
      FROM queues WHERE id = p_queue_id AND account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_max_messages IS NULL OR p_max_messages < 1 OR p_max_messages > 1000 THEN
        PERFORM out_of_range('max_messages', p_max_messages, 1, 1000);
    END IF;
    RETURN QUERY
    WITH gone AS (
        DELETE FROM messages m
         WHERE m.queue_id = p_queue_id
           AND m.sequence = ANY (ARRAY(
               SELECT c.sequence
                 FROM messages c
                WHERE c.queue_id = p_queue_id
                  AND c.visible_at <= now()
                  AND c.receive_count < max_rc
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

-- Delete one message of queue p_queue_id; as account_delete of 006 (a
-- receipt fences the delete; require_receipt refuses a leased message
-- without one). p_async_commit: commit without waiting for the disk.
CREATE FUNCTION queue_delete(p_queue_id bigint, p_account text, p_queue text, p_sequence bigint,
                             p_receipt uuid DEFAULT NULL, p_async_commit boolean DEFAULT false)
RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    required boolean;
    current_receipt uuid;
BEGIN
    SELECT require_receipt INTO required
      FROM queues WHERE id = p_queue_id AND account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_async_commit THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    IF p_receipt IS NULL THEN
        DELETE FROM messages
         WHERE queue_id = p_queue_id AND sequence = p_sequence
           AND NOT (required AND receive_count > 0 AND visible_at > now());
        IF FOUND THEN
            RETURN true;
        END IF;
        IF required THEN
            PERFORM 1 FROM messages WHERE queue_id = p_queue_id AND sequence = p_sequence;
            IF FOUND THEN
                PERFORM raise_error('SQ005', format('message %s of queue %s is leased and the queue requires a receipt to delete it: give the receipt of the receive',
                                                    p_sequence, to_json(p_queue)::text));
            END IF;
        END IF;
        RETURN false;
    END IF;
    DELETE FROM messages WHERE queue_id = p_queue_id AND sequence = p_sequence AND receipt = p_receipt;
    IF FOUND THEN
        RETURN true;
    END IF;
    SELECT receipt INTO current_receipt FROM messages WHERE queue_id = p_queue_id AND sequence = p_sequence;
    IF FOUND THEN
        PERFORM raise_error('SQ006', format('stale receipt %s for message %s in queue %s: the message was received again since; use the latest receipt',
                                            p_receipt, p_sequence, to_json(p_queue)::text));
    END IF;
    RETURN false;
END
$$;

-- Acknowledge (delete) many messages of queue p_queue_id; as account_ack
-- of 001: returns the sequences deleted, entries with a stale receipt are
-- skipped. p_async_commit: commit without waiting for the disk.
CREATE FUNCTION queue_ack(p_queue_id bigint, p_account text, p_queue text, p_sequences bigint[],
                          p_receipts uuid[] DEFAULT NULL, p_async_commit boolean DEFAULT false)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM 1 FROM queues WHERE id = p_queue_id AND account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_async_commit THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    IF p_receipts IS NULL THEN
        RETURN QUERY
        DELETE FROM messages m
         WHERE m.queue_id = p_queue_id AND m.sequence = ANY (p_sequences)
        RETURNING m.sequence;
        RETURN;
    END IF;
    RETURN QUERY
    DELETE FROM messages m
     USING unnest(p_sequences, p_receipts) AS a(sequence, receipt)
     WHERE m.queue_id = p_queue_id AND m.sequence = a.sequence
       AND (a.receipt IS NULL OR m.receipt = a.receipt)
    RETURNING m.sequence;
END
$$;

-- Make many messages of queue p_queue_id visible again after their
-- delays, recording their errors; as account_nack of 001.
CREATE FUNCTION queue_nack(p_queue_id bigint, p_account text, p_queue text, p_sequences bigint[],
                           p_receipts uuid[] DEFAULT NULL, p_delays integer[] DEFAULT NULL,
                           p_errors text[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    bad integer;
BEGIN
    PERFORM 1 FROM queues WHERE id = p_queue_id AND account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_delays IS NOT NULL THEN
        SELECT x INTO bad FROM unnest(p_delays) x WHERE x < 0 OR x > 43200 LIMIT 1;
        IF FOUND THEN PERFORM out_of_range('retry delay seconds', bad, 0, 43200); END IF;
    END IF;
    RETURN QUERY
    UPDATE messages m
       SET visible_at = now() + make_interval(secs => coalesce(a.delay, 0)),
           last_error = coalesce(a.error, m.last_error)
      FROM unnest(p_sequences, p_receipts, p_delays, p_errors) AS a(sequence, receipt, delay, error)
     WHERE m.queue_id = p_queue_id AND m.sequence = a.sequence
       AND (a.receipt IS NULL OR m.receipt = a.receipt)
    RETURNING m.sequence;
    IF p_delays IS NULL OR EXISTS (SELECT 1 FROM unnest(p_delays) x WHERE coalesce(x, 0) = 0) THEN
        PERFORM wake(p_queue_id, p_account, p_queue);
    END IF;
END
$$;

-- Fail many messages of queue p_queue_id permanently: to the queue's
-- dead_letter_queue (new messages there, ready at once) or to its DLQ
-- table (keeping its group); as account_fail of 013.
CREATE FUNCTION queue_fail(p_queue_id bigint, p_account text, p_queue text, p_sequences bigint[],
                           p_receipts uuid[] DEFAULT NULL, p_reasons text[] DEFAULT NULL,
                           p_errors text[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    dlq queues;
BEGIN
    PERFORM 1 FROM queues WHERE id = p_queue_id AND account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    SELECT d.* INTO dlq FROM queues q JOIN queues d ON d.id = q.dead_letter_queue_id WHERE q.id = p_queue_id;
    IF FOUND THEN
        -- The queue has a dead_letter_queue: the failed messages become new
        -- messages of that queue, ready at once. (On Citus that queue's
        -- shard may be on another node: the worker running this writes
        -- there itself.)
        RETURN QUERY
        WITH a AS (
            SELECT * FROM unnest(p_sequences, p_receipts, p_reasons, p_errors) AS a(sequence, receipt, reason, error)
        ), moved AS (
            DELETE FROM messages m
             USING a
             WHERE m.queue_id = p_queue_id AND m.sequence = a.sequence
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
            SELECT p_queue_id, current_minute(), count(*) FROM fwd HAVING count(*) > 0
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
         WHERE m.queue_id = p_queue_id AND m.sequence = a.sequence
           AND (a.receipt IS NULL OR m.receipt = a.receipt)
        RETURNING m.*, coalesce(a.reason, 'permanent_failure') AS reason, coalesce(a.error, m.last_error) AS error
    ), ins AS (
        INSERT INTO dead_letters (queue_id, sequence, body, headers, receive_count, created_at, expires_at, reason, last_error,
                                  group_key)
        SELECT p_queue_id, moved.sequence, moved.body, moved.headers, moved.receive_count, moved.created_at, moved.expires_at,
               moved.reason, moved.error, moved.group_key
          FROM moved
        ON CONFLICT (queue_id, sequence) DO NOTHING
        RETURNING 1
    ), counted AS (
        INSERT INTO queue_minutes AS qm (queue_id, minute, dlq_moves)
        SELECT p_queue_id, current_minute(), count(*) FROM ins HAVING count(*) > 0
        ON CONFLICT (queue_id, minute) DO UPDATE SET dlq_moves = qm.dlq_moves + excluded.dlq_moves
    )
    SELECT moved.sequence FROM moved;
END
$$;

-- Give back leases of queue p_queue_id never handed to a consumer; as
-- account_release of 011.
CREATE FUNCTION queue_release(p_queue_id bigint, p_account text, p_queue text, p_sequences bigint[], p_receipts uuid[])
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    t timestamptz := now();
BEGIN
    PERFORM 1 FROM queues WHERE id = p_queue_id AND account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    RETURN QUERY
    UPDATE messages m
       SET visible_at = t,
           receive_count = greatest(m.receive_count - 1, 0),
           final_lease = false,
           receipt = NULL
      FROM unnest(p_sequences, p_receipts) AS a(sequence, receipt)
     WHERE m.queue_id = p_queue_id AND m.sequence = a.sequence
       AND m.receipt = a.receipt AND m.visible_at > t
    RETURNING m.sequence;
    PERFORM wake(p_queue_id, p_account, p_queue);
END
$$;

-- Change the visibility of one message of queue p_queue_id, optionally
-- fenced by receipt; as account_set_visibility of 001.
CREATE FUNCTION queue_set_visibility(p_queue_id bigint, p_account text, p_queue text, p_sequence bigint,
                                     p_seconds integer, p_receipt uuid DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM 1 FROM queues WHERE id = p_queue_id AND account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_seconds IS NULL OR p_seconds < 0 OR p_seconds > 43200 THEN
        PERFORM out_of_range('visibility seconds', p_seconds, 0, 43200);
    END IF;
    UPDATE messages SET visible_at = now() + make_interval(secs => p_seconds)
     WHERE queue_id = p_queue_id AND sequence = p_sequence
       AND (p_receipt IS NULL OR receipt = p_receipt);
    IF NOT FOUND THEN
        IF p_receipt IS NOT NULL THEN
            PERFORM 1 FROM messages WHERE queue_id = p_queue_id AND sequence = p_sequence;
            IF FOUND THEN
                PERFORM raise_error('SQ006', format('stale receipt %s for message %s in queue %s: the message was received again since; use the latest receipt',
                                                    p_receipt, p_sequence, to_json(p_queue)::text));
            END IF;
        END IF;
        RETURN false;
    END IF;
    IF p_seconds = 0 THEN
        PERFORM wake(p_queue_id, p_account, p_queue);
    END IF;
    RETURN true;
END
$$;

---------------------------------------------------------------------------
-- The account_* functions: resolve the id, call the queue_* function
---------------------------------------------------------------------------

-- Send one message (see queue_send).
CREATE OR REPLACE FUNCTION account_send(p_account text, p_queue text, p_body jsonb, p_delay_seconds integer DEFAULT 0,
                                        p_headers jsonb DEFAULT NULL, p_expires_in_seconds integer DEFAULT NULL,
                                        p_dedup_key text DEFAULT NULL, p_group text DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN queue_send(queue_id(p_account, p_queue), p_account, p_queue, p_body, p_delay_seconds, p_headers,
                      p_expires_in_seconds, p_dedup_key, p_group);
END
$$;

-- Send a batch (see queue_send_batch).
CREATE OR REPLACE FUNCTION account_send_batch(p_account text, p_queue text, p_bodies jsonb[], p_delay_seconds integer DEFAULT 0,
                                              p_headers jsonb[] DEFAULT NULL, p_delays integer[] DEFAULT NULL,
                                              p_expires_in integer[] DEFAULT NULL, p_dedup_keys text[] DEFAULT NULL,
                                              p_groups text[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY SELECT s FROM queue_send_batch(queue_id(p_account, p_queue), p_account, p_queue, p_bodies,
                                                p_delay_seconds, p_headers, p_delays, p_expires_in,
                                                p_dedup_keys, p_groups) s;
END
$$;

-- Lease ready messages (see queue_receive).
CREATE OR REPLACE FUNCTION account_receive(p_account text, p_queue text, p_max_messages integer DEFAULT 1,
                                           p_visibility_timeout_seconds integer DEFAULT NULL)
RETURNS SETOF received_message
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY SELECT * FROM queue_receive(queue_id(p_account, p_queue), p_account, p_queue,
                                             p_max_messages, p_visibility_timeout_seconds);
END
$$;

-- Claim and delete ready messages (see queue_receive_delete).
CREATE OR REPLACE FUNCTION account_receive_delete(p_account text, p_queue text, p_max_messages integer DEFAULT 1)
RETURNS SETOF received_message
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY SELECT * FROM queue_receive_delete(queue_id(p_account, p_queue), p_account, p_queue, p_max_messages);
END
$$;

-- Delete one message (see queue_delete).
CREATE OR REPLACE FUNCTION account_delete(p_account text, p_queue text, p_sequence bigint, p_receipt uuid DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN queue_delete(queue_id(p_account, p_queue), p_account, p_queue, p_sequence, p_receipt);
END
$$;

-- Acknowledge many messages (see queue_ack).
CREATE OR REPLACE FUNCTION account_ack(p_account text, p_queue text, p_sequences bigint[], p_receipts uuid[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY SELECT s FROM queue_ack(queue_id(p_account, p_queue), p_account, p_queue, p_sequences, p_receipts) s;
END
$$;

-- Retry many messages after their delays (see queue_nack).
CREATE OR REPLACE FUNCTION account_nack(p_account text, p_queue text, p_sequences bigint[], p_receipts uuid[] DEFAULT NULL,
                                        p_delays integer[] DEFAULT NULL, p_errors text[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY SELECT s FROM queue_nack(queue_id(p_account, p_queue), p_account, p_queue, p_sequences, p_receipts,
                                          p_delays, p_errors) s;
END
$$;

-- Fail many messages permanently (see queue_fail).
CREATE OR REPLACE FUNCTION account_fail(p_account text, p_queue text, p_sequences bigint[], p_receipts uuid[] DEFAULT NULL,
                                        p_reasons text[] DEFAULT NULL, p_errors text[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY SELECT s FROM queue_fail(queue_id(p_account, p_queue), p_account, p_queue, p_sequences, p_receipts,
                                          p_reasons, p_errors) s;
END
$$;

-- Give back leases never handed to a consumer (see queue_release).
CREATE OR REPLACE FUNCTION account_release(p_account text, p_queue text, p_sequences bigint[], p_receipts uuid[])
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY SELECT s FROM queue_release(queue_id(p_account, p_queue), p_account, p_queue, p_sequences, p_receipts) s;
END
$$;

-- Change the visibility of one message (see queue_set_visibility).
CREATE OR REPLACE FUNCTION account_set_visibility(p_account text, p_queue text, p_sequence bigint, p_seconds integer,
                                                  p_receipt uuid DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN queue_set_visibility(queue_id(p_account, p_queue), p_account, p_queue, p_sequence, p_seconds, p_receipt);
END
$$;

---------------------------------------------------------------------------
-- The default account's short forms, as before, in plpgsql
---------------------------------------------------------------------------

CREATE FUNCTION send(queue text, body jsonb, delay_seconds integer DEFAULT 0, headers jsonb DEFAULT NULL,
                     expires_in_seconds integer DEFAULT NULL, dedup_key text DEFAULT NULL,
                     group_key text DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN account_send('000000000001', queue, body, delay_seconds, headers, expires_in_seconds, dedup_key, group_key);
END
$$;

CREATE FUNCTION delete(queue text, sequence bigint) RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN account_delete('000000000001', queue, sequence);
END
$$;

CREATE FUNCTION set_visibility(queue text, sequence bigint, seconds integer) RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN account_set_visibility('000000000001', queue, sequence, seconds);
END
$$;

CREATE FUNCTION receive_delete(queue text, max_messages integer DEFAULT 1) RETURNS SETOF received_message
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY SELECT * FROM account_receive_delete('000000000001', queue, max_messages);
END
$$;
