-- send_batch's options path: each row's delay and expiry read from the
-- arrays as JSON, and the wake-up through wake().
--
-- 015 reads each row's body, header and group from the arrays as JSON
-- (bs -> k) because Citus ships an array subscript unevaluated, so that
-- `p_bodies[k]` would carry the whole array in every row. Its options
-- path still read the delay and the expiry by subscript (p_delays[i + k],
-- p_expires_in[i + k]); here they are read like the rest, from ds and es,
-- the arrays as JSON ((ds ->> k)::integer: a NULL element, or a position
-- past the array's end, is NULL as before). The checks before (ranges,
-- headers, groups) are 015's, so a batch is refused with the same errors.
--
-- On Citus this changes nothing shipped: the subscripts sit inside
-- `t + make_interval(...)`, an operator over a function call, which Citus
-- evaluates whole before it ships the statement, so 015's rows already
-- carried their own visible_at and expires_at timestamps, never the
-- arrays (TestSendBatchRoutedToTheShard checks both paths; BENCHMARKS.md,
-- "Migration 016").
--
-- The options path's wake-up check, written out inline in 015, is
-- wake()'s. The bodies-only path keeps its inline check (012's lean path).

-- Send a batch to queue p_queue_id (p_account's queue p_queue): up to 1000
-- bodies, with optional per-message headers, delays, expiry, dedup keys and
-- groups (NULL, or shorter than the bodies: none for the rest). Returns
-- the sequences in the batch's order; for a dedup key already taken, the
-- sequence stored with it.
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
    -- The bodies, headers, groups, delays and expiry as JSON arrays (see
    -- 015 and 016 for why).
    bs jsonb;
    hs jsonb;
    gs jsonb;
    ds jsonb;
    es jsonb;
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

    IF p_dedup_keys IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM unnest(p_dedup_keys) k WHERE k IS NOT NULL) THEN
            -- Deduplicated batches go message by message, in order, so a
            -- key repeated inside the batch also returns the first sequence.
            FOR j IN 1..n LOOP
                RETURN NEXT queue_send(p_queue_id, p_account, p_queue, p_bodies[j],
                                       coalesce(p_delays[j], p_delay_seconds), p_headers[j],
                                       p_expires_in[j], p_dedup_keys[j], p_groups[j]);
            END LOOP;
            RETURN;
        END IF;
    END IF;

    hs := to_jsonb(p_headers);
    gs := to_jsonb(p_groups);
    ds := to_jsonb(p_delays);
    es := to_jsonb(p_expires_in);
    WHILE i < n LOOP
        IF n - i >= 100 THEN
            RETURN QUERY INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key) VALUES
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> i)::integer, d), qdelay)), t + make_interval(secs => (es ->> i)::integer),
                     bs -> i, nullif(hs -> i, 'null'), gs ->> i),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 1))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 1))::integer),
                     bs -> (i + 1), nullif(hs -> (i + 1), 'null'), gs ->> (i + 1)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 2))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 2))::integer),
                     bs -> (i + 2), nullif(hs -> (i + 2), 'null'), gs ->> (i + 2)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 3))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 3))::integer),
                     bs -> (i + 3), nullif(hs -> (i + 3), 'null'), gs ->> (i + 3)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 4))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 4))::integer),
                     bs -> (i + 4), nullif(hs -> (i + 4), 'null'), gs ->> (i + 4)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 5))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 5))::integer),
                     bs -> (i + 5), nullif(hs -> (i + 5), 'null'), gs ->> (i + 5)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 6))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 6))::integer),
                     bs -> (i + 6), nullif(hs -> (i + 6), 'null'), gs ->> (i + 6)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 7))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 7))::integer),
                     bs -> (i + 7), nullif(hs -> (i + 7), 'null'), gs ->> (i + 7)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 8))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 8))::integer),
                     bs -> (i + 8), nullif(hs -> (i + 8), 'null'), gs ->> (i + 8)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 9))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 9))::integer),
                     bs -> (i + 9), nullif(hs -> (i + 9), 'null'), gs ->> (i + 9)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 10))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 10))::integer),
                     bs -> (i + 10), nullif(hs -> (i + 10), 'null'), gs ->> (i + 10)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 11))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 11))::integer),
                     bs -> (i + 11), nullif(hs -> (i + 11), 'null'), gs ->> (i + 11)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 12))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 12))::integer),
                     bs -> (i + 12), nullif(hs -> (i + 12), 'null'), gs ->> (i + 12)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 13))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 13))::integer),
                     bs -> (i + 13), nullif(hs -> (i + 13), 'null'), gs ->> (i + 13)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 14))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 14))::integer),
                     bs -> (i + 14), nullif(hs -> (i + 14), 'null'), gs ->> (i + 14)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 15))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 15))::integer),
                     bs -> (i + 15), nullif(hs -> (i + 15), 'null'), gs ->> (i + 15)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 16))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 16))::integer),
                     bs -> (i + 16), nullif(hs -> (i + 16), 'null'), gs ->> (i + 16)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 17))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 17))::integer),
                     bs -> (i + 17), nullif(hs -> (i + 17), 'null'), gs ->> (i + 17)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 18))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 18))::integer),
                     bs -> (i + 18), nullif(hs -> (i + 18), 'null'), gs ->> (i + 18)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 19))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 19))::integer),
                     bs -> (i + 19), nullif(hs -> (i + 19), 'null'), gs ->> (i + 19)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 20))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 20))::integer),
                     bs -> (i + 20), nullif(hs -> (i + 20), 'null'), gs ->> (i + 20)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 21))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 21))::integer),
                     bs -> (i + 21), nullif(hs -> (i + 21), 'null'), gs ->> (i + 21)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 22))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 22))::integer),
                     bs -> (i + 22), nullif(hs -> (i + 22), 'null'), gs ->> (i + 22)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 23))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 23))::integer),
                     bs -> (i + 23), nullif(hs -> (i + 23), 'null'), gs ->> (i + 23)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 24))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 24))::integer),
                     bs -> (i + 24), nullif(hs -> (i + 24), 'null'), gs ->> (i + 24)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 25))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 25))::integer),
                     bs -> (i + 25), nullif(hs -> (i + 25), 'null'), gs ->> (i + 25)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 26))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 26))::integer),
                     bs -> (i + 26), nullif(hs -> (i + 26), 'null'), gs ->> (i + 26)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 27))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 27))::integer),
                     bs -> (i + 27), nullif(hs -> (i + 27), 'null'), gs ->> (i + 27)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 28))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 28))::integer),
                     bs -> (i + 28), nullif(hs -> (i + 28), 'null'), gs ->> (i + 28)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 29))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 29))::integer),
                     bs -> (i + 29), nullif(hs -> (i + 29), 'null'), gs ->> (i + 29)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 30))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 30))::integer),
                     bs -> (i + 30), nullif(hs -> (i + 30), 'null'), gs ->> (i + 30)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 31))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 31))::integer),
                     bs -> (i + 31), nullif(hs -> (i + 31), 'null'), gs ->> (i + 31)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 32))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 32))::integer),
                     bs -> (i + 32), nullif(hs -> (i + 32), 'null'), gs ->> (i + 32)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 33))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 33))::integer),
                     bs -> (i + 33), nullif(hs -> (i + 33), 'null'), gs ->> (i + 33)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 34))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 34))::integer),
                     bs -> (i + 34), nullif(hs -> (i + 34), 'null'), gs ->> (i + 34)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 35))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 35))::integer),
                     bs -> (i + 35), nullif(hs -> (i + 35), 'null'), gs ->> (i + 35)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 36))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 36))::integer),
                     bs -> (i + 36), nullif(hs -> (i + 36), 'null'), gs ->> (i + 36)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 37))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 37))::integer),
                     bs -> (i + 37), nullif(hs -> (i + 37), 'null'), gs ->> (i + 37)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 38))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 38))::integer),
                     bs -> (i + 38), nullif(hs -> (i + 38), 'null'), gs ->> (i + 38)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 39))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 39))::integer),
                     bs -> (i + 39), nullif(hs -> (i + 39), 'null'), gs ->> (i + 39)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 40))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 40))::integer),
                     bs -> (i + 40), nullif(hs -> (i + 40), 'null'), gs ->> (i + 40)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 41))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 41))::integer),
                     bs -> (i + 41), nullif(hs -> (i + 41), 'null'), gs ->> (i + 41)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 42))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 42))::integer),
                     bs -> (i + 42), nullif(hs -> (i + 42), 'null'), gs ->> (i + 42)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 43))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 43))::integer),
                     bs -> (i + 43), nullif(hs -> (i + 43), 'null'), gs ->> (i + 43)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 44))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 44))::integer),
                     bs -> (i + 44), nullif(hs -> (i + 44), 'null'), gs ->> (i + 44)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 45))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 45))::integer),
                     bs -> (i + 45), nullif(hs -> (i + 45), 'null'), gs ->> (i + 45)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 46))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 46))::integer),
                     bs -> (i + 46), nullif(hs -> (i + 46), 'null'), gs ->> (i + 46)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 47))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 47))::integer),
                     bs -> (i + 47), nullif(hs -> (i + 47), 'null'), gs ->> (i + 47)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 48))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 48))::integer),
                     bs -> (i + 48), nullif(hs -> (i + 48), 'null'), gs ->> (i + 48)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 49))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 49))::integer),
                     bs -> (i + 49), nullif(hs -> (i + 49), 'null'), gs ->> (i + 49)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 50))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 50))::integer),
                     bs -> (i + 50), nullif(hs -> (i + 50), 'null'), gs ->> (i + 50)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 51))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 51))::integer),
                     bs -> (i + 51), nullif(hs -> (i + 51), 'null'), gs ->> (i + 51)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 52))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 52))::integer),
                     bs -> (i + 52), nullif(hs -> (i + 52), 'null'), gs ->> (i + 52)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 53))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 53))::integer),
                     bs -> (i + 53), nullif(hs -> (i + 53), 'null'), gs ->> (i + 53)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 54))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 54))::integer),
                     bs -> (i + 54), nullif(hs -> (i + 54), 'null'), gs ->> (i + 54)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 55))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 55))::integer),
                     bs -> (i + 55), nullif(hs -> (i + 55), 'null'), gs ->> (i + 55)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 56))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 56))::integer),
                     bs -> (i + 56), nullif(hs -> (i + 56), 'null'), gs ->> (i + 56)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 57))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 57))::integer),
                     bs -> (i + 57), nullif(hs -> (i + 57), 'null'), gs ->> (i + 57)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 58))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 58))::integer),
                     bs -> (i + 58), nullif(hs -> (i + 58), 'null'), gs ->> (i + 58)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 59))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 59))::integer),
                     bs -> (i + 59), nullif(hs -> (i + 59), 'null'), gs ->> (i + 59)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 60))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 60))::integer),
                     bs -> (i + 60), nullif(hs -> (i + 60), 'null'), gs ->> (i + 60)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 61))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 61))::integer),
                     bs -> (i + 61), nullif(hs -> (i + 61), 'null'), gs ->> (i + 61)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 62))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 62))::integer),
                     bs -> (i + 62), nullif(hs -> (i + 62), 'null'), gs ->> (i + 62)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 63))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 63))::integer),
                     bs -> (i + 63), nullif(hs -> (i + 63), 'null'), gs ->> (i + 63)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 64))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 64))::integer),
                     bs -> (i + 64), nullif(hs -> (i + 64), 'null'), gs ->> (i + 64)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 65))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 65))::integer),
                     bs -> (i + 65), nullif(hs -> (i + 65), 'null'), gs ->> (i + 65)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 66))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 66))::integer),
                     bs -> (i + 66), nullif(hs -> (i + 66), 'null'), gs ->> (i + 66)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 67))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 67))::integer),
                     bs -> (i + 67), nullif(hs -> (i + 67), 'null'), gs ->> (i + 67)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 68))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 68))::integer),
                     bs -> (i + 68), nullif(hs -> (i + 68), 'null'), gs ->> (i + 68)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 69))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 69))::integer),
                     bs -> (i + 69), nullif(hs -> (i + 69), 'null'), gs ->> (i + 69)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 70))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 70))::integer),
                     bs -> (i + 70), nullif(hs -> (i + 70), 'null'), gs ->> (i + 70)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 71))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 71))::integer),
                     bs -> (i + 71), nullif(hs -> (i + 71), 'null'), gs ->> (i + 71)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 72))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 72))::integer),
                     bs -> (i + 72), nullif(hs -> (i + 72), 'null'), gs ->> (i + 72)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 73))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 73))::integer),
                     bs -> (i + 73), nullif(hs -> (i + 73), 'null'), gs ->> (i + 73)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 74))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 74))::integer),
                     bs -> (i + 74), nullif(hs -> (i + 74), 'null'), gs ->> (i + 74)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 75))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 75))::integer),
                     bs -> (i + 75), nullif(hs -> (i + 75), 'null'), gs ->> (i + 75)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 76))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 76))::integer),
                     bs -> (i + 76), nullif(hs -> (i + 76), 'null'), gs ->> (i + 76)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 77))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 77))::integer),
                     bs -> (i + 77), nullif(hs -> (i + 77), 'null'), gs ->> (i + 77)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 78))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 78))::integer),
                     bs -> (i + 78), nullif(hs -> (i + 78), 'null'), gs ->> (i + 78)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 79))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 79))::integer),
                     bs -> (i + 79), nullif(hs -> (i + 79), 'null'), gs ->> (i + 79)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 80))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 80))::integer),
                     bs -> (i + 80), nullif(hs -> (i + 80), 'null'), gs ->> (i + 80)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 81))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 81))::integer),
                     bs -> (i + 81), nullif(hs -> (i + 81), 'null'), gs ->> (i + 81)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 82))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 82))::integer),
                     bs -> (i + 82), nullif(hs -> (i + 82), 'null'), gs ->> (i + 82)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 83))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 83))::integer),
                     bs -> (i + 83), nullif(hs -> (i + 83), 'null'), gs ->> (i + 83)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 84))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 84))::integer),
                     bs -> (i + 84), nullif(hs -> (i + 84), 'null'), gs ->> (i + 84)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 85))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 85))::integer),
                     bs -> (i + 85), nullif(hs -> (i + 85), 'null'), gs ->> (i + 85)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 86))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 86))::integer),
                     bs -> (i + 86), nullif(hs -> (i + 86), 'null'), gs ->> (i + 86)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 87))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 87))::integer),
                     bs -> (i + 87), nullif(hs -> (i + 87), 'null'), gs ->> (i + 87)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 88))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 88))::integer),
                     bs -> (i + 88), nullif(hs -> (i + 88), 'null'), gs ->> (i + 88)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 89))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 89))::integer),
                     bs -> (i + 89), nullif(hs -> (i + 89), 'null'), gs ->> (i + 89)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 90))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 90))::integer),
                     bs -> (i + 90), nullif(hs -> (i + 90), 'null'), gs ->> (i + 90)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 91))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 91))::integer),
                     bs -> (i + 91), nullif(hs -> (i + 91), 'null'), gs ->> (i + 91)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 92))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 92))::integer),
                     bs -> (i + 92), nullif(hs -> (i + 92), 'null'), gs ->> (i + 92)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 93))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 93))::integer),
                     bs -> (i + 93), nullif(hs -> (i + 93), 'null'), gs ->> (i + 93)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 94))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 94))::integer),
                     bs -> (i + 94), nullif(hs -> (i + 94), 'null'), gs ->> (i + 94)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 95))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 95))::integer),
                     bs -> (i + 95), nullif(hs -> (i + 95), 'null'), gs ->> (i + 95)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 96))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 96))::integer),
                     bs -> (i + 96), nullif(hs -> (i + 96), 'null'), gs ->> (i + 96)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 97))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 97))::integer),
                     bs -> (i + 97), nullif(hs -> (i + 97), 'null'), gs ->> (i + 97)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 98))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 98))::integer),
                     bs -> (i + 98), nullif(hs -> (i + 98), 'null'), gs ->> (i + 98)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 99))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 99))::integer),
                     bs -> (i + 99), nullif(hs -> (i + 99), 'null'), gs ->> (i + 99))
            RETURNING sequence;
            i := i + 100;
        ELSIF n - i >= 10 THEN
            RETURN QUERY INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key) VALUES
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> i)::integer, d), qdelay)), t + make_interval(secs => (es ->> i)::integer),
                     bs -> i, nullif(hs -> i, 'null'), gs ->> i),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 1))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 1))::integer),
                     bs -> (i + 1), nullif(hs -> (i + 1), 'null'), gs ->> (i + 1)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 2))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 2))::integer),
                     bs -> (i + 2), nullif(hs -> (i + 2), 'null'), gs ->> (i + 2)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 3))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 3))::integer),
                     bs -> (i + 3), nullif(hs -> (i + 3), 'null'), gs ->> (i + 3)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 4))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 4))::integer),
                     bs -> (i + 4), nullif(hs -> (i + 4), 'null'), gs ->> (i + 4)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 5))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 5))::integer),
                     bs -> (i + 5), nullif(hs -> (i + 5), 'null'), gs ->> (i + 5)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 6))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 6))::integer),
                     bs -> (i + 6), nullif(hs -> (i + 6), 'null'), gs ->> (i + 6)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 7))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 7))::integer),
                     bs -> (i + 7), nullif(hs -> (i + 7), 'null'), gs ->> (i + 7)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 8))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 8))::integer),
                     bs -> (i + 8), nullif(hs -> (i + 8), 'null'), gs ->> (i + 8)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 9))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 9))::integer),
                     bs -> (i + 9), nullif(hs -> (i + 9), 'null'), gs ->> (i + 9))
            RETURNING sequence;
            i := i + 10;
        ELSIF n - i >= 5 THEN
            RETURN QUERY INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key) VALUES
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> i)::integer, d), qdelay)), t + make_interval(secs => (es ->> i)::integer),
                     bs -> i, nullif(hs -> i, 'null'), gs ->> i),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 1))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 1))::integer),
                     bs -> (i + 1), nullif(hs -> (i + 1), 'null'), gs ->> (i + 1)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 2))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 2))::integer),
                     bs -> (i + 2), nullif(hs -> (i + 2), 'null'), gs ->> (i + 2)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 3))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 3))::integer),
                     bs -> (i + 3), nullif(hs -> (i + 3), 'null'), gs ->> (i + 3)),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 4))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 4))::integer),
                     bs -> (i + 4), nullif(hs -> (i + 4), 'null'), gs ->> (i + 4))
            RETURNING sequence;
            i := i + 5;
        ELSIF n - i >= 2 THEN
            RETURN QUERY INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key) VALUES
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> i)::integer, d), qdelay)), t + make_interval(secs => (es ->> i)::integer),
                     bs -> i, nullif(hs -> i, 'null'), gs ->> i),
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> (i + 1))::integer, d), qdelay)), t + make_interval(secs => (es ->> (i + 1))::integer),
                     bs -> (i + 1), nullif(hs -> (i + 1), 'null'), gs ->> (i + 1))
            RETURNING sequence;
            i := i + 2;
        ELSE
            RETURN QUERY INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key) VALUES
                (p_queue_id, t + make_interval(secs => greatest(coalesce((ds ->> i)::integer, d), qdelay)), t + make_interval(secs => (es ->> i)::integer),
                     bs -> i, nullif(hs -> i, 'null'), gs ->> i)
            RETURNING sequence;
            i := i + 1;
        END IF;
    END LOOP;
    PERFORM wake(p_queue_id, p_account, p_queue);
END
$$;
