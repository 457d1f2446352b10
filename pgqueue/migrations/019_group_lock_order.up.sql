-- Ordered groups take their locks in one order: a statement that touches
-- several groups of a queue locks their message_groups rows sorted by
-- group key before it inserts or deletes any of their messages.
--
-- A grouped message joins or leaves its group under the lock of the
-- group's row (008: group_enter counts it in, group_leave counts it out
-- and hands the group to the next message), and each row trigger took
-- that lock when it ran: a batch send in the order of its array, an ack
-- of several groups' heads in the order its DELETE met them (by
-- sequence). Two such statements over the same groups in opposite orders
-- each held one lock and waited for the other's: Postgres broke the cycle
-- by failing one of them with 40P01 "deadlock detected". The reliability
-- suite saw it (TestFifoGroupsAcrossProcessesWithKill: a SendBatch across
-- 20 groups while two serve processes acked batches of heads), and a
-- user's send failed with it. Nothing was lost (the failed statement is
-- rolled back whole), but a send should not fail so.
--
-- Now each such statement first locks its groups in group-key order, in
-- one query, and only then writes its messages, whose triggers find the
-- locks already held: two statements needing groups a and b both ask for
-- a first, so neither holds b while waiting for a. lock_groups does it
-- for messages about to be inserted (creating the groups that do not
-- exist yet, empty, as the first insert into them would), lock_groups_of
-- for messages about to be deleted: it locks those messages first, as
-- their DELETE would, so that the order stays the one every path keeps
-- (a message's row, then its group's; a single ack takes them so, and a
-- purge or an ack that took a group first and then waited for a message
-- another ack holds would close a cycle with it). They are taken by:
--
--   queue_send_batch (and so account_send_batch and send_batch) with
--     groups; a deduplicated batch then drops a group it made for a key
--     already taken, which sent nothing;
--   queue_ack and queue_fail (account_ack, account_fail, the client's
--     acks and failures) of more than one message;
--   queue_receive_delete, which now claims, locks, then deletes;
--   account_purge (all of the queue's messages, then all of its groups);
--   account_redrive and account_redrive_sequences, which now pick their
--     dead letters, lock their groups, then move them;
--   settle_invocations (triggers' migration 009) for its failures and
--     acks together.
--
-- A queue without groups pays one index probe of message_groups in the
-- acks and failures of more than one message, and nothing elsewhere.
-- What still takes group locks in another order: a transaction of the
-- caller's with several statements (each statement is ordered, the
-- statements are in the caller's order); a failure moved into a
-- dead_letter_queue (the copies join the DLQ's groups in sequence order);
-- the sweeper's expiry and receive-limit moves. pgqueue's
-- TestGroupLocksTakenInOneOrder checks each statement above: while it
-- waits for the lowest group it holds none of the others.

-- Lock the groups p_groups of queue p_queue_id (NULLs ignored, each group
-- once), in group-key order, creating with size 0 those that do not
-- exist; the messages inserted next count themselves in. Keys outside
-- 1-128 characters are left to group_enter, which refuses them by name.
CREATE FUNCTION lock_groups(p_queue_id bigint, p_groups text[]) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO message_groups AS g (queue_id, group_key, size)
    SELECT DISTINCT p_queue_id, k, 0 FROM unnest(p_groups) k
     WHERE length(k) BETWEEN 1 AND 128
     ORDER BY 2
    ON CONFLICT (queue_id, group_key) DO UPDATE SET size = g.size;
END
$$;

-- Lock the messages p_sequences of queue p_queue_id, then their groups in
-- group-key order (ungrouped and missing messages lock no group). The
-- messages come first as everywhere (RATIONALE.md, "Ordered groups": a
-- DELETE locks the rows it deletes before its triggers lock their groups).
CREATE FUNCTION lock_groups_of(p_queue_id bigint, p_sequences bigint[]) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM 1 FROM messages m
     WHERE m.queue_id = p_queue_id AND m.sequence = ANY (p_sequences)
       FOR UPDATE;
    PERFORM 1 FROM message_groups g
     WHERE g.queue_id = p_queue_id
       AND g.group_key IN (SELECT m.group_key FROM messages m
                            WHERE m.queue_id = p_queue_id AND m.sequence = ANY (p_sequences))
     ORDER BY g.group_key
       FOR UPDATE OF g;
END
$$;

CREATE OR REPLACE FUNCTION queue_send_batch(p_queue_id bigint, p_account text, p_queue text, p_bodies jsonb[],
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
    t timestamptz := now();
    d integer := coalesce(p_delay_seconds, 0);
    -- The bodies, headers and groups as JSON arrays (see the top for why).
    bs jsonb;
    hs jsonb;
    gs jsonb;
    b jsonb;
    bad integer;
    -- Bodies checked, then bodies inserted, so far.
    i integer := 0;
BEGIN
    SELECT delay_seconds, max_message_bytes, fifo INTO qdelay, qmax, qfifo
      FROM queues WHERE id = p_queue_id AND account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF n = 0 THEN
        RETURN;
    END IF;
    IF n > 1000 THEN PERFORM out_of_range('batch size', n, 1, 1000); END IF;
    IF p_delay_seconds < 0 OR p_delay_seconds > 43200 THEN
        PERFORM out_of_range('delay_seconds', p_delay_seconds, 0, 43200);
    END IF;
    IF qfifo THEN
        IF p_groups IS NULL OR cardinality(p_groups) < n OR EXISTS (SELECT 1 FROM unnest(p_groups) g WHERE g IS NULL) THEN
            PERFORM fifo_needs_group(p_queue);
        END IF;
    END IF;
    -- 014 read the arrays with unnest: one with more dimensions or other
    -- bounds is flattened first, so that position k is element k (the Go
    -- client never sends one).
    IF array_ndims(p_bodies) > 1 OR array_lower(p_bodies, 1) <> 1 THEN
        p_bodies := ARRAY(SELECT unnest(p_bodies));
    END IF;
    bs := to_jsonb(p_bodies);
    -- The array's text holds each body's text: when it fits, every body
    -- does; otherwise (or with a NULL body) the first bad body, in order,
    -- raises its error.
    IF octet_length(bs::text) > qmax OR array_position(p_bodies, NULL) IS NOT NULL THEN
        FOREACH b IN ARRAY p_bodies LOOP
            i := i + 1;
            IF b IS NULL OR octet_length(b::text) > qmax THEN
                PERFORM bad_body(p_queue, b, i, qmax);
            END IF;
        END LOOP;
        i := 0;
    END IF;

    IF p_headers IS NULL AND p_delays IS NULL AND p_expires_in IS NULL AND p_dedup_keys IS NULL AND p_groups IS NULL THEN
        -- The common case: bodies only, one visibility for the batch.
        visible := now() + make_interval(secs => greatest(coalesce(p_delay_seconds, 0), qdelay));
        WHILE i < n LOOP
            IF n - i >= 100 THEN
                RETURN QUERY INSERT INTO messages (queue_id, visible_at, body) VALUES
                    (p_queue_id, visible, bs -> i), (p_queue_id, visible, bs -> (i + 1)), (p_queue_id, visible, bs -> (i + 2)),
                    (p_queue_id, visible, bs -> (i + 3)), (p_queue_id, visible, bs -> (i + 4)), (p_queue_id, visible, bs -> (i + 5)),
                    (p_queue_id, visible, bs -> (i + 6)), (p_queue_id, visible, bs -> (i + 7)), (p_queue_id, visible, bs -> (i + 8)),
                    (p_queue_id, visible, bs -> (i + 9)), (p_queue_id, visible, bs -> (i + 10)), (p_queue_id, visible, bs -> (i + 11)),
                    (p_queue_id, visible, bs -> (i + 12)), (p_queue_id, visible, bs -> (i + 13)), (p_queue_id, visible, bs -> (i + 14)),
                    (p_queue_id, visible, bs -> (i + 15)), (p_queue_id, visible, bs -> (i + 16)), (p_queue_id, visible, bs -> (i + 17)),
                    (p_queue_id, visible, bs -> (i + 18)), (p_queue_id, visible, bs -> (i + 19)), (p_queue_id, visible, bs -> (i + 20)),
                    (p_queue_id, visible, bs -> (i + 21)), (p_queue_id, visible, bs -> (i + 22)), (p_queue_id, visible, bs -> (i + 23)),
                    (p_queue_id, visible, bs -> (i + 24)), (p_queue_id, visible, bs -> (i + 25)), (p_queue_id, visible, bs -> (i + 26)),
                    (p_queue_id, visible, bs -> (i + 27)), (p_queue_id, visible, bs -> (i + 28)), (p_queue_id, visible, bs -> (i + 29)),
                    (p_queue_id, visible, bs -> (i + 30)), (p_queue_id, visible, bs -> (i + 31)), (p_queue_id, visible, bs -> (i + 32)),
                    (p_queue_id, visible, bs -> (i + 33)), (p_queue_id, visible, bs -> (i + 34)), (p_queue_id, visible, bs -> (i + 35)),
                    (p_queue_id, visible, bs -> (i + 36)), (p_queue_id, visible, bs -> (i + 37)), (p_queue_id, visible, bs -> (i + 38)),
                    (p_queue_id, visible, bs -> (i + 39)), (p_queue_id, visible, bs -> (i + 40)), (p_queue_id, visible, bs -> (i + 41)),
                    (p_queue_id, visible, bs -> (i + 42)), (p_queue_id, visible, bs -> (i + 43)), (p_queue_id, visible, bs -> (i + 44)),
                    (p_queue_id, visible, bs -> (i + 45)), (p_queue_id, visible, bs -> (i + 46)), (p_queue_id, visible, bs -> (i + 47)),
                    (p_queue_id, visible, bs -> (i + 48)), (p_queue_id, visible, bs -> (i + 49)), (p_queue_id, visible, bs -> (i + 50)),
                    (p_queue_id, visible, bs -> (i + 51)), (p_queue_id, visible, bs -> (i + 52)), (p_queue_id, visible, bs -> (i + 53)),
                    (p_queue_id, visible, bs -> (i + 54)), (p_queue_id, visible, bs -> (i + 55)), (p_queue_id, visible, bs -> (i + 56)),
                    (p_queue_id, visible, bs -> (i + 57)), (p_queue_id, visible, bs -> (i + 58)), (p_queue_id, visible, bs -> (i + 59)),
                    (p_queue_id, visible, bs -> (i + 60)), (p_queue_id, visible, bs -> (i + 61)), (p_queue_id, visible, bs -> (i + 62)),
                    (p_queue_id, visible, bs -> (i + 63)), (p_queue_id, visible, bs -> (i + 64)), (p_queue_id, visible, bs -> (i + 65)),
                    (p_queue_id, visible, bs -> (i + 66)), (p_queue_id, visible, bs -> (i + 67)), (p_queue_id, visible, bs -> (i + 68)),
                    (p_queue_id, visible, bs -> (i + 69)), (p_queue_id, visible, bs -> (i + 70)), (p_queue_id, visible, bs -> (i + 71)),
                    (p_queue_id, visible, bs -> (i + 72)), (p_queue_id, visible, bs -> (i + 73)), (p_queue_id, visible, bs -> (i + 74)),
                    (p_queue_id, visible, bs -> (i + 75)), (p_queue_id, visible, bs -> (i + 76)), (p_queue_id, visible, bs -> (i + 77)),
                    (p_queue_id, visible, bs -> (i + 78)), (p_queue_id, visible, bs -> (i + 79)), (p_queue_id, visible, bs -> (i + 80)),
                    (p_queue_id, visible, bs -> (i + 81)), (p_queue_id, visible, bs -> (i + 82)), (p_queue_id, visible, bs -> (i + 83)),
                    (p_queue_id, visible, bs -> (i + 84)), (p_queue_id, visible, bs -> (i + 85)), (p_queue_id, visible, bs -> (i + 86)),
                    (p_queue_id, visible, bs -> (i + 87)), (p_queue_id, visible, bs -> (i + 88)), (p_queue_id, visible, bs -> (i + 89)),
                    (p_queue_id, visible, bs -> (i + 90)), (p_queue_id, visible, bs -> (i + 91)), (p_queue_id, visible, bs -> (i + 92)),
                    (p_queue_id, visible, bs -> (i + 93)), (p_queue_id, visible, bs -> (i + 94)), (p_queue_id, visible, bs -> (i + 95)),
                    (p_queue_id, visible, bs -> (i + 96)), (p_queue_id, visible, bs -> (i + 97)), (p_queue_id, visible, bs -> (i + 98)),
                    (p_queue_id, visible, bs -> (i + 99))
                RETURNING sequence;
                i := i + 100;
            ELSIF n - i >= 10 THEN
                RETURN QUERY INSERT INTO messages (queue_id, visible_at, body) VALUES
                    (p_queue_id, visible, bs -> i), (p_queue_id, visible, bs -> (i + 1)), (p_queue_id, visible, bs -> (i + 2)),
                    (p_queue_id, visible, bs -> (i + 3)), (p_queue_id, visible, bs -> (i + 4)), (p_queue_id, visible, bs -> (i + 5)),
                    (p_queue_id, visible, bs -> (i + 6)), (p_queue_id, visible, bs -> (i + 7)), (p_queue_id, visible, bs -> (i + 8)),
                    (p_queue_id, visible, bs -> (i + 9))
                RETURNING sequence;
                i := i + 10;
            ELSIF n - i >= 5 THEN
                RETURN QUERY INSERT INTO messages (queue_id, visible_at, body) VALUES
                    (p_queue_id, visible, bs -> i), (p_queue_id, visible, bs -> (i + 1)), (p_queue_id, visible, bs -> (i + 2)),
                    (p_queue_id, visible, bs -> (i + 3)), (p_queue_id, visible, bs -> (i + 4))
                RETURNING sequence;
                i := i + 5;
            ELSIF n - i >= 2 THEN
                RETURN QUERY INSERT INTO messages (queue_id, visible_at, body) VALUES
                    (p_queue_id, visible, bs -> i), (p_queue_id, visible, bs -> (i + 1))
                RETURNING sequence;
                i := i + 2;
            ELSE
                RETURN QUERY INSERT INTO messages (queue_id, visible_at, body) VALUES
                    (p_queue_id, visible, bs -> i)
                RETURNING sequence;
                i := i + 1;
            END IF;
        END LOOP;
        -- wake(), inline: a NOTIFY only when a long poll registered interest.
        IF visible <= now() THEN
            IF EXISTS (SELECT 1 FROM wake_interest w WHERE w.queue_id = p_queue_id AND w.until > now()) THEN
                PERFORM pg_notify(current_schema() || '_wake', p_account || '/' || p_queue);
            END IF;
        END IF;
        RETURN;
    END IF;

    -- Per-message options: 008's checks, in 008's order.
    IF array_ndims(p_headers) > 1 OR array_lower(p_headers, 1) <> 1 THEN p_headers := ARRAY(SELECT unnest(p_headers)); END IF;
    IF array_ndims(p_delays) > 1 OR array_lower(p_delays, 1) <> 1 THEN p_delays := ARRAY(SELECT unnest(p_delays)); END IF;
    IF array_ndims(p_expires_in) > 1 OR array_lower(p_expires_in, 1) <> 1 THEN p_expires_in := ARRAY(SELECT unnest(p_expires_in)); END IF;
    IF array_ndims(p_dedup_keys) > 1 OR array_lower(p_dedup_keys, 1) <> 1 THEN p_dedup_keys := ARRAY(SELECT unnest(p_dedup_keys)); END IF;
    IF array_ndims(p_groups) > 1 OR array_lower(p_groups, 1) <> 1 THEN p_groups := ARRAY(SELECT unnest(p_groups)); END IF;
    IF p_delays IS NOT NULL THEN
        SELECT x INTO bad FROM unnest(p_delays) x WHERE x < 0 OR x > 43200 LIMIT 1;
        IF FOUND THEN PERFORM out_of_range('delay_seconds', bad, 0, 43200); END IF;
    END IF;
    IF p_expires_in IS NOT NULL THEN
        SELECT x INTO bad FROM unnest(p_expires_in) x WHERE x < 1 OR x > 1209600 LIMIT 1;
        IF FOUND THEN PERFORM out_of_range('expires_in_seconds', bad, 1, 1209600); END IF;
    END IF;
    IF p_headers IS NOT NULL THEN
        PERFORM 1 FROM unnest(p_headers) h WHERE h IS NOT NULL AND jsonb_typeof(h) <> 'object';
        IF FOUND THEN PERFORM raise_error('SQ005', 'invalid headers: use a JSON object or NULL'); END IF;
    END IF;

    -- Ordered groups: the groups' locks first, in one order (019).
    IF p_groups IS NOT NULL AND n > 1 THEN
        PERFORM lock_groups(p_queue_id, p_groups);
    END IF;

    IF p_dedup_keys IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM unnest(p_dedup_keys) k WHERE k IS NOT NULL) THEN
            -- Deduplicated batches go message by message, in order, so a
            -- key repeated inside the batch also returns the first sequence.
            FOR j IN 1..n LOOP
                RETURN NEXT queue_send(p_queue_id, p_account, p_queue, p_bodies[j],
                                       coalesce(p_delays[j], p_delay_seconds), p_headers[j],
                                       p_expires_in[j], p_dedup_keys[j], p_groups[j]);
            END LOOP;
            -- A key already taken sent nothing: a group the lock made
            -- for it alone is empty.
            DELETE FROM message_groups g
             WHERE g.queue_id = p_queue_id AND g.size = 0 AND g.group_key = ANY (p_groups);
            RETURN;
        END IF;
    END IF;

    hs := to_jsonb(p_headers);
    gs := to_jsonb(p_groups);
    WHILE i < n LOOP
        IF n - i >= 100 THEN
            RETURN QUERY INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key) VALUES
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 1], d), qdelay)), t + make_interval(secs => p_expires_in[i + 1]),
                     bs -> i, nullif(hs -> i, 'null'), gs ->> i),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 2], d), qdelay)), t + make_interval(secs => p_expires_in[i + 2]),
                     bs -> (i + 1), nullif(hs -> (i + 1), 'null'), gs ->> (i + 1)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 3], d), qdelay)), t + make_interval(secs => p_expires_in[i + 3]),
                     bs -> (i + 2), nullif(hs -> (i + 2), 'null'), gs ->> (i + 2)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 4], d), qdelay)), t + make_interval(secs => p_expires_in[i + 4]),
                     bs -> (i + 3), nullif(hs -> (i + 3), 'null'), gs ->> (i + 3)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 5], d), qdelay)), t + make_interval(secs => p_expires_in[i + 5]),
                     bs -> (i + 4), nullif(hs -> (i + 4), 'null'), gs ->> (i + 4)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 6], d), qdelay)), t + make_interval(secs => p_expires_in[i + 6]),
                     bs -> (i + 5), nullif(hs -> (i + 5), 'null'), gs ->> (i + 5)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 7], d), qdelay)), t + make_interval(secs => p_expires_in[i + 7]),
                     bs -> (i + 6), nullif(hs -> (i + 6), 'null'), gs ->> (i + 6)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 8], d), qdelay)), t + make_interval(secs => p_expires_in[i + 8]),
                     bs -> (i + 7), nullif(hs -> (i + 7), 'null'), gs ->> (i + 7)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 9], d), qdelay)), t + make_interval(secs => p_expires_in[i + 9]),
                     bs -> (i + 8), nullif(hs -> (i + 8), 'null'), gs ->> (i + 8)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 10], d), qdelay)), t + make_interval(secs => p_expires_in[i + 10]),
                     bs -> (i + 9), nullif(hs -> (i + 9), 'null'), gs ->> (i + 9)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 11], d), qdelay)), t + make_interval(secs => p_expires_in[i + 11]),
                     bs -> (i + 10), nullif(hs -> (i + 10), 'null'), gs ->> (i + 10)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 12], d), qdelay)), t + make_interval(secs => p_expires_in[i + 12]),
                     bs -> (i + 11), nullif(hs -> (i + 11), 'null'), gs ->> (i + 11)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 13], d), qdelay)), t + make_interval(secs => p_expires_in[i + 13]),
                     bs -> (i + 12), nullif(hs -> (i + 12), 'null'), gs ->> (i + 12)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 14], d), qdelay)), t + make_interval(secs => p_expires_in[i + 14]),
                     bs -> (i + 13), nullif(hs -> (i + 13), 'null'), gs ->> (i + 13)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 15], d), qdelay)), t + make_interval(secs => p_expires_in[i + 15]),
                     bs -> (i + 14), nullif(hs -> (i + 14), 'null'), gs ->> (i + 14)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 16], d), qdelay)), t + make_interval(secs => p_expires_in[i + 16]),
                     bs -> (i + 15), nullif(hs -> (i + 15), 'null'), gs ->> (i + 15)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 17], d), qdelay)), t + make_interval(secs => p_expires_in[i + 17]),
                     bs -> (i + 16), nullif(hs -> (i + 16), 'null'), gs ->> (i + 16)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 18], d), qdelay)), t + make_interval(secs => p_expires_in[i + 18]),
                     bs -> (i + 17), nullif(hs -> (i + 17), 'null'), gs ->> (i + 17)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 19], d), qdelay)), t + make_interval(secs => p_expires_in[i + 19]),
                     bs -> (i + 18), nullif(hs -> (i + 18), 'null'), gs ->> (i + 18)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 20], d), qdelay)), t + make_interval(secs => p_expires_in[i + 20]),
                     bs -> (i + 19), nullif(hs -> (i + 19), 'null'), gs ->> (i + 19)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 21], d), qdelay)), t + make_interval(secs => p_expires_in[i + 21]),
                     bs -> (i + 20), nullif(hs -> (i + 20), 'null'), gs ->> (i + 20)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 22], d), qdelay)), t + make_interval(secs => p_expires_in[i + 22]),
                     bs -> (i + 21), nullif(hs -> (i + 21), 'null'), gs ->> (i + 21)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 23], d), qdelay)), t + make_interval(secs => p_expires_in[i + 23]),
                     bs -> (i + 22), nullif(hs -> (i + 22), 'null'), gs ->> (i + 22)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 24], d), qdelay)), t + make_interval(secs => p_expires_in[i + 24]),
                     bs -> (i + 23), nullif(hs -> (i + 23), 'null'), gs ->> (i + 23)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 25], d), qdelay)), t + make_interval(secs => p_expires_in[i + 25]),
                     bs -> (i + 24), nullif(hs -> (i + 24), 'null'), gs ->> (i + 24)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 26], d), qdelay)), t + make_interval(secs => p_expires_in[i + 26]),
                     bs -> (i + 25), nullif(hs -> (i + 25), 'null'), gs ->> (i + 25)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 27], d), qdelay)), t + make_interval(secs => p_expires_in[i + 27]),
                     bs -> (i + 26), nullif(hs -> (i + 26), 'null'), gs ->> (i + 26)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 28], d), qdelay)), t + make_interval(secs => p_expires_in[i + 28]),
                     bs -> (i + 27), nullif(hs -> (i + 27), 'null'), gs ->> (i + 27)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 29], d), qdelay)), t + make_interval(secs => p_expires_in[i + 29]),
                     bs -> (i + 28), nullif(hs -> (i + 28), 'null'), gs ->> (i + 28)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 30], d), qdelay)), t + make_interval(secs => p_expires_in[i + 30]),
                     bs -> (i + 29), nullif(hs -> (i + 29), 'null'), gs ->> (i + 29)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 31], d), qdelay)), t + make_interval(secs => p_expires_in[i + 31]),
                     bs -> (i + 30), nullif(hs -> (i + 30), 'null'), gs ->> (i + 30)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 32], d), qdelay)), t + make_interval(secs => p_expires_in[i + 32]),
                     bs -> (i + 31), nullif(hs -> (i + 31), 'null'), gs ->> (i + 31)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 33], d), qdelay)), t + make_interval(secs => p_expires_in[i + 33]),
                     bs -> (i + 32), nullif(hs -> (i + 32), 'null'), gs ->> (i + 32)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 34], d), qdelay)), t + make_interval(secs => p_expires_in[i + 34]),
                     bs -> (i + 33), nullif(hs -> (i + 33), 'null'), gs ->> (i + 33)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 35], d), qdelay)), t + make_interval(secs => p_expires_in[i + 35]),
                     bs -> (i + 34), nullif(hs -> (i + 34), 'null'), gs ->> (i + 34)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 36], d), qdelay)), t + make_interval(secs => p_expires_in[i + 36]),
                     bs -> (i + 35), nullif(hs -> (i + 35), 'null'), gs ->> (i + 35)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 37], d), qdelay)), t + make_interval(secs => p_expires_in[i + 37]),
                     bs -> (i + 36), nullif(hs -> (i + 36), 'null'), gs ->> (i + 36)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 38], d), qdelay)), t + make_interval(secs => p_expires_in[i + 38]),
                     bs -> (i + 37), nullif(hs -> (i + 37), 'null'), gs ->> (i + 37)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 39], d), qdelay)), t + make_interval(secs => p_expires_in[i + 39]),
                     bs -> (i + 38), nullif(hs -> (i + 38), 'null'), gs ->> (i + 38)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 40], d), qdelay)), t + make_interval(secs => p_expires_in[i + 40]),
                     bs -> (i + 39), nullif(hs -> (i + 39), 'null'), gs ->> (i + 39)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 41], d), qdelay)), t + make_interval(secs => p_expires_in[i + 41]),
                     bs -> (i + 40), nullif(hs -> (i + 40), 'null'), gs ->> (i + 40)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 42], d), qdelay)), t + make_interval(secs => p_expires_in[i + 42]),
                     bs -> (i + 41), nullif(hs -> (i + 41), 'null'), gs ->> (i + 41)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 43], d), qdelay)), t + make_interval(secs => p_expires_in[i + 43]),
                     bs -> (i + 42), nullif(hs -> (i + 42), 'null'), gs ->> (i + 42)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 44], d), qdelay)), t + make_interval(secs => p_expires_in[i + 44]),
                     bs -> (i + 43), nullif(hs -> (i + 43), 'null'), gs ->> (i + 43)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 45], d), qdelay)), t + make_interval(secs => p_expires_in[i + 45]),
                     bs -> (i + 44), nullif(hs -> (i + 44), 'null'), gs ->> (i + 44)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 46], d), qdelay)), t + make_interval(secs => p_expires_in[i + 46]),
                     bs -> (i + 45), nullif(hs -> (i + 45), 'null'), gs ->> (i + 45)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 47], d), qdelay)), t + make_interval(secs => p_expires_in[i + 47]),
                     bs -> (i + 46), nullif(hs -> (i + 46), 'null'), gs ->> (i + 46)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 48], d), qdelay)), t + make_interval(secs => p_expires_in[i + 48]),
                     bs -> (i + 47), nullif(hs -> (i + 47), 'null'), gs ->> (i + 47)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 49], d), qdelay)), t + make_interval(secs => p_expires_in[i + 49]),
                     bs -> (i + 48), nullif(hs -> (i + 48), 'null'), gs ->> (i + 48)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 50], d), qdelay)), t + make_interval(secs => p_expires_in[i + 50]),
                     bs -> (i + 49), nullif(hs -> (i + 49), 'null'), gs ->> (i + 49)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 51], d), qdelay)), t + make_interval(secs => p_expires_in[i + 51]),
                     bs -> (i + 50), nullif(hs -> (i + 50), 'null'), gs ->> (i + 50)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 52], d), qdelay)), t + make_interval(secs => p_expires_in[i + 52]),
                     bs -> (i + 51), nullif(hs -> (i + 51), 'null'), gs ->> (i + 51)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 53], d), qdelay)), t + make_interval(secs => p_expires_in[i + 53]),
                     bs -> (i + 52), nullif(hs -> (i + 52), 'null'), gs ->> (i + 52)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 54], d), qdelay)), t + make_interval(secs => p_expires_in[i + 54]),
                     bs -> (i + 53), nullif(hs -> (i + 53), 'null'), gs ->> (i + 53)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 55], d), qdelay)), t + make_interval(secs => p_expires_in[i + 55]),
                     bs -> (i + 54), nullif(hs -> (i + 54), 'null'), gs ->> (i + 54)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 56], d), qdelay)), t + make_interval(secs => p_expires_in[i + 56]),
                     bs -> (i + 55), nullif(hs -> (i + 55), 'null'), gs ->> (i + 55)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 57], d), qdelay)), t + make_interval(secs => p_expires_in[i + 57]),
                     bs -> (i + 56), nullif(hs -> (i + 56), 'null'), gs ->> (i + 56)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 58], d), qdelay)), t + make_interval(secs => p_expires_in[i + 58]),
                     bs -> (i + 57), nullif(hs -> (i + 57), 'null'), gs ->> (i + 57)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 59], d), qdelay)), t + make_interval(secs => p_expires_in[i + 59]),
                     bs -> (i + 58), nullif(hs -> (i + 58), 'null'), gs ->> (i + 58)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 60], d), qdelay)), t + make_interval(secs => p_expires_in[i + 60]),
                     bs -> (i + 59), nullif(hs -> (i + 59), 'null'), gs ->> (i + 59)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 61], d), qdelay)), t + make_interval(secs => p_expires_in[i + 61]),
                     bs -> (i + 60), nullif(hs -> (i + 60), 'null'), gs ->> (i + 60)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 62], d), qdelay)), t + make_interval(secs => p_expires_in[i + 62]),
                     bs -> (i + 61), nullif(hs -> (i + 61), 'null'), gs ->> (i + 61)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 63], d), qdelay)), t + make_interval(secs => p_expires_in[i + 63]),
                     bs -> (i + 62), nullif(hs -> (i + 62), 'null'), gs ->> (i + 62)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 64], d), qdelay)), t + make_interval(secs => p_expires_in[i + 64]),
                     bs -> (i + 63), nullif(hs -> (i + 63), 'null'), gs ->> (i + 63)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 65], d), qdelay)), t + make_interval(secs => p_expires_in[i + 65]),
                     bs -> (i + 64), nullif(hs -> (i + 64), 'null'), gs ->> (i + 64)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 66], d), qdelay)), t + make_interval(secs => p_expires_in[i + 66]),
                     bs -> (i + 65), nullif(hs -> (i + 65), 'null'), gs ->> (i + 65)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 67], d), qdelay)), t + make_interval(secs => p_expires_in[i + 67]),
                     bs -> (i + 66), nullif(hs -> (i + 66), 'null'), gs ->> (i + 66)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 68], d), qdelay)), t + make_interval(secs => p_expires_in[i + 68]),
                     bs -> (i + 67), nullif(hs -> (i + 67), 'null'), gs ->> (i + 67)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 69], d), qdelay)), t + make_interval(secs => p_expires_in[i + 69]),
                     bs -> (i + 68), nullif(hs -> (i + 68), 'null'), gs ->> (i + 68)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 70], d), qdelay)), t + make_interval(secs => p_expires_in[i + 70]),
                     bs -> (i + 69), nullif(hs -> (i + 69), 'null'), gs ->> (i + 69)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 71], d), qdelay)), t + make_interval(secs => p_expires_in[i + 71]),
                     bs -> (i + 70), nullif(hs -> (i + 70), 'null'), gs ->> (i + 70)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 72], d), qdelay)), t + make_interval(secs => p_expires_in[i + 72]),
                     bs -> (i + 71), nullif(hs -> (i + 71), 'null'), gs ->> (i + 71)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 73], d), qdelay)), t + make_interval(secs => p_expires_in[i + 73]),
                     bs -> (i + 72), nullif(hs -> (i + 72), 'null'), gs ->> (i + 72)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 74], d), qdelay)), t + make_interval(secs => p_expires_in[i + 74]),
                     bs -> (i + 73), nullif(hs -> (i + 73), 'null'), gs ->> (i + 73)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 75], d), qdelay)), t + make_interval(secs => p_expires_in[i + 75]),
                     bs -> (i + 74), nullif(hs -> (i + 74), 'null'), gs ->> (i + 74)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 76], d), qdelay)), t + make_interval(secs => p_expires_in[i + 76]),
                     bs -> (i + 75), nullif(hs -> (i + 75), 'null'), gs ->> (i + 75)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 77], d), qdelay)), t + make_interval(secs => p_expires_in[i + 77]),
                     bs -> (i + 76), nullif(hs -> (i + 76), 'null'), gs ->> (i + 76)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 78], d), qdelay)), t + make_interval(secs => p_expires_in[i + 78]),
                     bs -> (i + 77), nullif(hs -> (i + 77), 'null'), gs ->> (i + 77)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 79], d), qdelay)), t + make_interval(secs => p_expires_in[i + 79]),
                     bs -> (i + 78), nullif(hs -> (i + 78), 'null'), gs ->> (i + 78)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 80], d), qdelay)), t + make_interval(secs => p_expires_in[i + 80]),
                     bs -> (i + 79), nullif(hs -> (i + 79), 'null'), gs ->> (i + 79)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 81], d), qdelay)), t + make_interval(secs => p_expires_in[i + 81]),
                     bs -> (i + 80), nullif(hs -> (i + 80), 'null'), gs ->> (i + 80)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 82], d), qdelay)), t + make_interval(secs => p_expires_in[i + 82]),
                     bs -> (i + 81), nullif(hs -> (i + 81), 'null'), gs ->> (i + 81)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 83], d), qdelay)), t + make_interval(secs => p_expires_in[i + 83]),
                     bs -> (i + 82), nullif(hs -> (i + 82), 'null'), gs ->> (i + 82)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 84], d), qdelay)), t + make_interval(secs => p_expires_in[i + 84]),
                     bs -> (i + 83), nullif(hs -> (i + 83), 'null'), gs ->> (i + 83)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 85], d), qdelay)), t + make_interval(secs => p_expires_in[i + 85]),
                     bs -> (i + 84), nullif(hs -> (i + 84), 'null'), gs ->> (i + 84)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 86], d), qdelay)), t + make_interval(secs => p_expires_in[i + 86]),
                     bs -> (i + 85), nullif(hs -> (i + 85), 'null'), gs ->> (i + 85)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 87], d), qdelay)), t + make_interval(secs => p_expires_in[i + 87]),
                     bs -> (i + 86), nullif(hs -> (i + 86), 'null'), gs ->> (i + 86)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 88], d), qdelay)), t + make_interval(secs => p_expires_in[i + 88]),
                     bs -> (i + 87), nullif(hs -> (i + 87), 'null'), gs ->> (i + 87)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 89], d), qdelay)), t + make_interval(secs => p_expires_in[i + 89]),
                     bs -> (i + 88), nullif(hs -> (i + 88), 'null'), gs ->> (i + 88)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 90], d), qdelay)), t + make_interval(secs => p_expires_in[i + 90]),
                     bs -> (i + 89), nullif(hs -> (i + 89), 'null'), gs ->> (i + 89)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 91], d), qdelay)), t + make_interval(secs => p_expires_in[i + 91]),
                     bs -> (i + 90), nullif(hs -> (i + 90), 'null'), gs ->> (i + 90)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 92], d), qdelay)), t + make_interval(secs => p_expires_in[i + 92]),
                     bs -> (i + 91), nullif(hs -> (i + 91), 'null'), gs ->> (i + 91)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 93], d), qdelay)), t + make_interval(secs => p_expires_in[i + 93]),
                     bs -> (i + 92), nullif(hs -> (i + 92), 'null'), gs ->> (i + 92)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 94], d), qdelay)), t + make_interval(secs => p_expires_in[i + 94]),
                     bs -> (i + 93), nullif(hs -> (i + 93), 'null'), gs ->> (i + 93)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 95], d), qdelay)), t + make_interval(secs => p_expires_in[i + 95]),
                     bs -> (i + 94), nullif(hs -> (i + 94), 'null'), gs ->> (i + 94)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 96], d), qdelay)), t + make_interval(secs => p_expires_in[i + 96]),
                     bs -> (i + 95), nullif(hs -> (i + 95), 'null'), gs ->> (i + 95)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 97], d), qdelay)), t + make_interval(secs => p_expires_in[i + 97]),
                     bs -> (i + 96), nullif(hs -> (i + 96), 'null'), gs ->> (i + 96)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 98], d), qdelay)), t + make_interval(secs => p_expires_in[i + 98]),
                     bs -> (i + 97), nullif(hs -> (i + 97), 'null'), gs ->> (i + 97)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 99], d), qdelay)), t + make_interval(secs => p_expires_in[i + 99]),
                     bs -> (i + 98), nullif(hs -> (i + 98), 'null'), gs ->> (i + 98)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 100], d), qdelay)), t + make_interval(secs => p_expires_in[i + 100]),
                     bs -> (i + 99), nullif(hs -> (i + 99), 'null'), gs ->> (i + 99))
            RETURNING sequence;
            i := i + 100;
        ELSIF n - i >= 10 THEN
            RETURN QUERY INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key) VALUES
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 1], d), qdelay)), t + make_interval(secs => p_expires_in[i + 1]),
                     bs -> i, nullif(hs -> i, 'null'), gs ->> i),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 2], d), qdelay)), t + make_interval(secs => p_expires_in[i + 2]),
                     bs -> (i + 1), nullif(hs -> (i + 1), 'null'), gs ->> (i + 1)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 3], d), qdelay)), t + make_interval(secs => p_expires_in[i + 3]),
                     bs -> (i + 2), nullif(hs -> (i + 2), 'null'), gs ->> (i + 2)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 4], d), qdelay)), t + make_interval(secs => p_expires_in[i + 4]),
                     bs -> (i + 3), nullif(hs -> (i + 3), 'null'), gs ->> (i + 3)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 5], d), qdelay)), t + make_interval(secs => p_expires_in[i + 5]),
                     bs -> (i + 4), nullif(hs -> (i + 4), 'null'), gs ->> (i + 4)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 6], d), qdelay)), t + make_interval(secs => p_expires_in[i + 6]),
                     bs -> (i + 5), nullif(hs -> (i + 5), 'null'), gs ->> (i + 5)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 7], d), qdelay)), t + make_interval(secs => p_expires_in[i + 7]),
                     bs -> (i + 6), nullif(hs -> (i + 6), 'null'), gs ->> (i + 6)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 8], d), qdelay)), t + make_interval(secs => p_expires_in[i + 8]),
                     bs -> (i + 7), nullif(hs -> (i + 7), 'null'), gs ->> (i + 7)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 9], d), qdelay)), t + make_interval(secs => p_expires_in[i + 9]),
                     bs -> (i + 8), nullif(hs -> (i + 8), 'null'), gs ->> (i + 8)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 10], d), qdelay)), t + make_interval(secs => p_expires_in[i + 10]),
                     bs -> (i + 9), nullif(hs -> (i + 9), 'null'), gs ->> (i + 9))
            RETURNING sequence;
            i := i + 10;
        ELSIF n - i >= 5 THEN
            RETURN QUERY INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key) VALUES
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 1], d), qdelay)), t + make_interval(secs => p_expires_in[i + 1]),
                     bs -> i, nullif(hs -> i, 'null'), gs ->> i),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 2], d), qdelay)), t + make_interval(secs => p_expires_in[i + 2]),
                     bs -> (i + 1), nullif(hs -> (i + 1), 'null'), gs ->> (i + 1)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 3], d), qdelay)), t + make_interval(secs => p_expires_in[i + 3]),
                     bs -> (i + 2), nullif(hs -> (i + 2), 'null'), gs ->> (i + 2)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 4], d), qdelay)), t + make_interval(secs => p_expires_in[i + 4]),
                     bs -> (i + 3), nullif(hs -> (i + 3), 'null'), gs ->> (i + 3)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 5], d), qdelay)), t + make_interval(secs => p_expires_in[i + 5]),
                     bs -> (i + 4), nullif(hs -> (i + 4), 'null'), gs ->> (i + 4))
            RETURNING sequence;
            i := i + 5;
        ELSIF n - i >= 2 THEN
            RETURN QUERY INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key) VALUES
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 1], d), qdelay)), t + make_interval(secs => p_expires_in[i + 1]),
                     bs -> i, nullif(hs -> i, 'null'), gs ->> i),
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 2], d), qdelay)), t + make_interval(secs => p_expires_in[i + 2]),
                     bs -> (i + 1), nullif(hs -> (i + 1), 'null'), gs ->> (i + 1))
            RETURNING sequence;
            i := i + 2;
        ELSE
            RETURN QUERY INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key) VALUES
                (p_queue_id, t + make_interval(secs => greatest(coalesce(p_delays[i + 1], d), qdelay)), t + make_interval(secs => p_expires_in[i + 1]),
                     bs -> i, nullif(hs -> i, 'null'), gs ->> i)
            RETURNING sequence;
            i := i + 1;
        END IF;
    END LOOP;
    IF EXISTS (SELECT 1 FROM wake_interest w WHERE w.queue_id = p_queue_id AND w.until > now()) THEN
        PERFORM pg_notify(current_schema() || '_wake', p_account || '/' || p_queue);
    END IF;
END
$$;


CREATE OR REPLACE FUNCTION queue_ack(p_queue_id bigint, p_account text, p_queue text, p_sequences bigint[],
                          p_receipts uuid[] DEFAULT NULL, p_async_commit boolean DEFAULT false)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT SET random_page_cost = 1.1 AS $$
BEGIN
    PERFORM 1 FROM queues WHERE id = p_queue_id AND account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF cardinality(p_sequences) > 1 AND EXISTS (SELECT 1 FROM message_groups g WHERE g.queue_id = p_queue_id) THEN
        PERFORM lock_groups_of(p_queue_id, p_sequences);
    END IF;
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


CREATE OR REPLACE FUNCTION queue_fail(p_queue_id bigint, p_account text, p_queue text, p_sequences bigint[],
                           p_receipts uuid[] DEFAULT NULL, p_reasons text[] DEFAULT NULL,
                           p_errors text[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT SET random_page_cost = 1.1 AS $$
DECLARE
    dlq queues;
BEGIN
    PERFORM 1 FROM queues WHERE id = p_queue_id AND account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF cardinality(p_sequences) > 1 AND EXISTS (SELECT 1 FROM message_groups g WHERE g.queue_id = p_queue_id) THEN
        PERFORM lock_groups_of(p_queue_id, p_sequences);
    END IF;
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


CREATE OR REPLACE FUNCTION queue_receive_delete(p_queue_id bigint, p_account text, p_queue text,
                                                p_max_messages integer DEFAULT 1)
RETURNS SETOF received_message
LANGUAGE plpgsql SET search_path FROM CURRENT SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    max_rc integer;
    claimed bigint[];
BEGIN
    SELECT max_receive_count INTO max_rc
      FROM queues WHERE id = p_queue_id AND account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_max_messages IS NULL OR p_max_messages < 1 OR p_max_messages > 1000 THEN
        PERFORM out_of_range('max_messages', p_max_messages, 1, 1000);
    END IF;
    claimed := ARRAY(
        SELECT c.sequence
          FROM messages c
         WHERE c.queue_id = p_queue_id
           AND c.visible_at <= now()
           AND c.receive_count < max_rc
           AND (c.expires_at IS NULL OR c.expires_at > now())
         ORDER BY c.visible_at, c.sequence
         LIMIT p_max_messages
           FOR UPDATE SKIP LOCKED);
    IF cardinality(claimed) > 1 AND EXISTS (SELECT 1 FROM message_groups g WHERE g.queue_id = p_queue_id) THEN
        PERFORM lock_groups_of(p_queue_id, claimed);
    END IF;
    RETURN QUERY
    WITH gone AS (
        DELETE FROM messages m
         WHERE m.queue_id = p_queue_id AND m.sequence = ANY (claimed)
        RETURNING m.sequence, m.body, m.headers, m.receive_count + 1 AS receive_count, m.created_at, m.group_key
    )
    SELECT g.sequence, g.body, g.headers, g.receive_count, g.created_at, now(), NULL::uuid, g.group_key
      FROM gone g
     ORDER BY g.sequence;
END
$$;

CREATE OR REPLACE FUNCTION account_purge(p_account text, p_queue text) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
    n bigint;
BEGIN
    qid := queue_id(p_account, p_queue);
    IF EXISTS (SELECT 1 FROM message_groups g WHERE g.queue_id = qid) THEN
        PERFORM 1 FROM messages m WHERE m.queue_id = qid FOR UPDATE;
        PERFORM 1 FROM message_groups g WHERE g.queue_id = qid ORDER BY g.group_key FOR UPDATE;
    END IF;
    DELETE FROM messages WHERE queue_id = qid;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

CREATE OR REPLACE FUNCTION account_redrive(p_account text, p_queue text, p_max_messages integer DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
    n bigint;
    picked bigint[];
BEGIN
    qid := queue_id(p_account, p_queue);
    IF p_max_messages IS NOT NULL AND p_max_messages < 1 THEN
        PERFORM out_of_range('max_messages', p_max_messages, 1, 2147483647);
    END IF;
    picked := ARRAY(SELECT p.sequence FROM dead_letters p
                     WHERE p.queue_id = qid
                     ORDER BY p.failed_at, p.sequence
                     LIMIT p_max_messages
                       FOR UPDATE SKIP LOCKED);
    RETURN redrive_picked(p_account, p_queue, qid, picked);
END
$$;

CREATE OR REPLACE FUNCTION account_redrive_sequences(p_account text, p_queue text, p_sequences bigint[]) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
    n bigint;
    picked bigint[];
BEGIN
    qid := queue_id(p_account, p_queue);
    n := coalesce(cardinality(p_sequences), 0);
    IF n < 1 OR n > 1000 THEN
        PERFORM out_of_range('number of sequences', n, 1, 1000);
    END IF;
    picked := ARRAY(SELECT d.sequence FROM dead_letters d
                     WHERE d.queue_id = qid AND d.sequence = ANY (p_sequences)
                     ORDER BY d.sequence
                       FOR UPDATE);
    RETURN redrive_picked(p_account, p_queue, qid, picked);
END
$$;

-- Move the dead letters p_sequences of queue p_queue_id, locked by the
-- caller, back into the queue (ready now, receive_count 0, keeping
-- sequence, body, headers and created_at; a grouped one rejoins the end of
-- its group), their groups locked first; returns how many moved.
CREATE FUNCTION redrive_picked(p_account text, p_queue text, p_queue_id bigint, p_sequences bigint[]) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    n bigint;
BEGIN
    IF cardinality(p_sequences) > 1 THEN
        PERFORM lock_groups(p_queue_id, ARRAY(SELECT d.group_key FROM dead_letters d
                                                WHERE d.queue_id = p_queue_id AND d.sequence = ANY (p_sequences)));
    END IF;
    WITH moved AS (
        DELETE FROM dead_letters d
         WHERE d.queue_id = p_queue_id AND d.sequence = ANY (p_sequences)
        RETURNING d.*
    )
    INSERT INTO messages (queue_id, sequence, visible_at, created_at, expires_at, body, headers, group_key)
    SELECT p_queue_id, moved.sequence, now(), moved.created_at, moved.expires_at, moved.body, moved.headers, moved.group_key
      FROM moved
     ORDER BY moved.sequence
    ON CONFLICT (queue_id, sequence) DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        PERFORM wake(p_queue_id, p_account, p_queue);
    END IF;
    RETURN n;
END
$$;
