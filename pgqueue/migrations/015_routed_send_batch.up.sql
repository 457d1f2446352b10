-- send_batch as an INSERT that Citus routes to the queue's shard, and a
-- cheaper send_batch on plain Postgres (issues #19 and #18).
--
-- Until 014, queue_send_batch inserted a batch with one
-- `INSERT ... SELECT ... FROM unnest(p_bodies)`. Citus plans an
-- INSERT ... SELECT into a distributed table from a SELECT on no
-- distributed table by running the SELECT, collecting its rows as an
-- intermediate result and copying them into the shard: a send delegated
-- to the worker paid that machinery there for every batch
-- (docs/scale-out.md, "Capacity"). A multi-row `INSERT ... VALUES (...),
-- (...)` whose distribution column is the function's p_queue_id is a
-- router insert instead: Citus evaluates the rows, finds the one shard and
-- runs the INSERT there (on the worker itself when the call was
-- delegated), the rows in their VALUES order. A VALUES list has a fixed
-- length, so a batch goes in static statements of 100, 10, 5, 2 and 1
-- rows, the largest that fits first (23 = 10 + 10 + 2 + 1; 1000 is ten
-- statements). The rows keep the batch's order, so the sequences (drawn by
-- the column default on Postgres, by 013's trigger on the shard on Citus)
-- grow in the batch's order, and RETURNING gives them back in that order,
-- which send_batch_noted relies on.
--
-- The bodies are checked first, in order, by a loop (NULL, or over
-- max_message_bytes counted on the body's text, as before): the first bad
-- body raises its error before anything is inserted.
--
-- One body for every batch. 014 handed batches with per-message options
-- (headers, delays, expiry, groups, dedup keys) to send_batch_full (008's
-- body, by queue name, with its own INSERT from unnest). queue_send_batch
-- now takes them itself: 008's checks in 008's order, each message's
-- visibility and expiry computed in one statement, then the same chunked
-- INSERTs with six columns; a batch with dedup keys goes message by
-- message through queue_send (by id, where 008 went through account_send
-- by name), in order, so a key repeated inside the batch returns the first
-- sequence. send_batch_full is dropped.
--
-- The wrappers by name lose a frame: account_send_batch and the default
-- account's send_batch read the id themselves and call queue_send_batch
-- (a missing queue leaves the id NULL, for which queue_send_batch raises
-- the SQ001 / SQ003 that queue_id() raised), where they called queue_id()
-- and, for send_batch, account_send_batch too.

DROP FUNCTION send_batch_full(text, text, jsonb[], integer, jsonb[], integer[], integer[], text[], text[]);

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
    vis timestamptz[];
    exps timestamptz[];
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
    FOREACH b IN ARRAY p_bodies LOOP
        i := i + 1;
        IF b IS NULL OR octet_length(b::text) > qmax THEN
            PERFORM bad_body(p_queue, b, i, qmax);
        END IF;
    END LOOP;
    i := 0;
    -- The INSERTs address the arrays by subscript from 1, where 014 read
    -- them with unnest: an array with other bounds or more dimensions is
    -- flattened first (the Go client never sends one).
    IF array_ndims(p_bodies) > 1 OR array_lower(p_bodies, 1) <> 1 THEN
        p_bodies := ARRAY(SELECT unnest(p_bodies));
    END IF;

    IF p_headers IS NULL AND p_delays IS NULL AND p_expires_in IS NULL AND p_dedup_keys IS NULL AND p_groups IS NULL THEN
        -- The common case: bodies only, one visibility for the batch.
        visible := now() + make_interval(secs => greatest(coalesce(p_delay_seconds, 0), qdelay));
        WHILE i < n LOOP
            IF n - i >= 100 THEN
                RETURN QUERY INSERT INTO messages (queue_id, visible_at, body) VALUES
                    (p_queue_id, visible, p_bodies[i + 1]), (p_queue_id, visible, p_bodies[i + 2]), (p_queue_id, visible, p_bodies[i + 3]),
                    (p_queue_id, visible, p_bodies[i + 4]), (p_queue_id, visible, p_bodies[i + 5]), (p_queue_id, visible, p_bodies[i + 6]),
                    (p_queue_id, visible, p_bodies[i + 7]), (p_queue_id, visible, p_bodies[i + 8]), (p_queue_id, visible, p_bodies[i + 9]),
                    (p_queue_id, visible, p_bodies[i + 10]), (p_queue_id, visible, p_bodies[i + 11]), (p_queue_id, visible, p_bodies[i + 12]),
                    (p_queue_id, visible, p_bodies[i + 13]), (p_queue_id, visible, p_bodies[i + 14]), (p_queue_id, visible, p_bodies[i + 15]),
                    (p_queue_id, visible, p_bodies[i + 16]), (p_queue_id, visible, p_bodies[i + 17]), (p_queue_id, visible, p_bodies[i + 18]),
                    (p_queue_id, visible, p_bodies[i + 19]), (p_queue_id, visible, p_bodies[i + 20]), (p_queue_id, visible, p_bodies[i + 21]),
                    (p_queue_id, visible, p_bodies[i + 22]), (p_queue_id, visible, p_bodies[i + 23]), (p_queue_id, visible, p_bodies[i + 24]),
                    (p_queue_id, visible, p_bodies[i + 25]), (p_queue_id, visible, p_bodies[i + 26]), (p_queue_id, visible, p_bodies[i + 27]),
                    (p_queue_id, visible, p_bodies[i + 28]), (p_queue_id, visible, p_bodies[i + 29]), (p_queue_id, visible, p_bodies[i + 30]),
                    (p_queue_id, visible, p_bodies[i + 31]), (p_queue_id, visible, p_bodies[i + 32]), (p_queue_id, visible, p_bodies[i + 33]),
                    (p_queue_id, visible, p_bodies[i + 34]), (p_queue_id, visible, p_bodies[i + 35]), (p_queue_id, visible, p_bodies[i + 36]),
                    (p_queue_id, visible, p_bodies[i + 37]), (p_queue_id, visible, p_bodies[i + 38]), (p_queue_id, visible, p_bodies[i + 39]),
                    (p_queue_id, visible, p_bodies[i + 40]), (p_queue_id, visible, p_bodies[i + 41]), (p_queue_id, visible, p_bodies[i + 42]),
                    (p_queue_id, visible, p_bodies[i + 43]), (p_queue_id, visible, p_bodies[i + 44]), (p_queue_id, visible, p_bodies[i + 45]),
                    (p_queue_id, visible, p_bodies[i + 46]), (p_queue_id, visible, p_bodies[i + 47]), (p_queue_id, visible, p_bodies[i + 48]),
                    (p_queue_id, visible, p_bodies[i + 49]), (p_queue_id, visible, p_bodies[i + 50]), (p_queue_id, visible, p_bodies[i + 51]),
                    (p_queue_id, visible, p_bodies[i + 52]), (p_queue_id, visible, p_bodies[i + 53]), (p_queue_id, visible, p_bodies[i + 54]),
                    (p_queue_id, visible, p_bodies[i + 55]), (p_queue_id, visible, p_bodies[i + 56]), (p_queue_id, visible, p_bodies[i + 57]),
                    (p_queue_id, visible, p_bodies[i + 58]), (p_queue_id, visible, p_bodies[i + 59]), (p_queue_id, visible, p_bodies[i + 60]),
                    (p_queue_id, visible, p_bodies[i + 61]), (p_queue_id, visible, p_bodies[i + 62]), (p_queue_id, visible, p_bodies[i + 63]),
                    (p_queue_id, visible, p_bodies[i + 64]), (p_queue_id, visible, p_bodies[i + 65]), (p_queue_id, visible, p_bodies[i + 66]),
                    (p_queue_id, visible, p_bodies[i + 67]), (p_queue_id, visible, p_bodies[i + 68]), (p_queue_id, visible, p_bodies[i + 69]),
                    (p_queue_id, visible, p_bodies[i + 70]), (p_queue_id, visible, p_bodies[i + 71]), (p_queue_id, visible, p_bodies[i + 72]),
                    (p_queue_id, visible, p_bodies[i + 73]), (p_queue_id, visible, p_bodies[i + 74]), (p_queue_id, visible, p_bodies[i + 75]),
                    (p_queue_id, visible, p_bodies[i + 76]), (p_queue_id, visible, p_bodies[i + 77]), (p_queue_id, visible, p_bodies[i + 78]),
                    (p_queue_id, visible, p_bodies[i + 79]), (p_queue_id, visible, p_bodies[i + 80]), (p_queue_id, visible, p_bodies[i + 81]),
                    (p_queue_id, visible, p_bodies[i + 82]), (p_queue_id, visible, p_bodies[i + 83]), (p_queue_id, visible, p_bodies[i + 84]),
                    (p_queue_id, visible, p_bodies[i + 85]), (p_queue_id, visible, p_bodies[i + 86]), (p_queue_id, visible, p_bodies[i + 87]),
                    (p_queue_id, visible, p_bodies[i + 88]), (p_queue_id, visible, p_bodies[i + 89]), (p_queue_id, visible, p_bodies[i + 90]),
                    (p_queue_id, visible, p_bodies[i + 91]), (p_queue_id, visible, p_bodies[i + 92]), (p_queue_id, visible, p_bodies[i + 93]),
                    (p_queue_id, visible, p_bodies[i + 94]), (p_queue_id, visible, p_bodies[i + 95]), (p_queue_id, visible, p_bodies[i + 96]),
                    (p_queue_id, visible, p_bodies[i + 97]), (p_queue_id, visible, p_bodies[i + 98]), (p_queue_id, visible, p_bodies[i + 99]),
                    (p_queue_id, visible, p_bodies[i + 100])
                RETURNING sequence;
                i := i + 100;
            ELSIF n - i >= 10 THEN
                RETURN QUERY INSERT INTO messages (queue_id, visible_at, body) VALUES
                    (p_queue_id, visible, p_bodies[i + 1]), (p_queue_id, visible, p_bodies[i + 2]), (p_queue_id, visible, p_bodies[i + 3]),
                    (p_queue_id, visible, p_bodies[i + 4]), (p_queue_id, visible, p_bodies[i + 5]), (p_queue_id, visible, p_bodies[i + 6]),
                    (p_queue_id, visible, p_bodies[i + 7]), (p_queue_id, visible, p_bodies[i + 8]), (p_queue_id, visible, p_bodies[i + 9]),
                    (p_queue_id, visible, p_bodies[i + 10])
                RETURNING sequence;
                i := i + 10;
            ELSIF n - i >= 5 THEN
                RETURN QUERY INSERT INTO messages (queue_id, visible_at, body) VALUES
                    (p_queue_id, visible, p_bodies[i + 1]), (p_queue_id, visible, p_bodies[i + 2]), (p_queue_id, visible, p_bodies[i + 3]),
                    (p_queue_id, visible, p_bodies[i + 4]), (p_queue_id, visible, p_bodies[i + 5])
                RETURNING sequence;
                i := i + 5;
            ELSIF n - i >= 2 THEN
                RETURN QUERY INSERT INTO messages (queue_id, visible_at, body) VALUES
                    (p_queue_id, visible, p_bodies[i + 1]), (p_queue_id, visible, p_bodies[i + 2])
                RETURNING sequence;
                i := i + 2;
            ELSE
                RETURN QUERY INSERT INTO messages (queue_id, visible_at, body) VALUES
                    (p_queue_id, visible, p_bodies[i + 1])
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

    SELECT array_agg(now() + make_interval(secs => greatest(coalesce(p_delays[o], p_delay_seconds, 0), qdelay)) ORDER BY o),
           array_agg(now() + make_interval(secs => p_expires_in[o]) ORDER BY o)
      INTO vis, exps
      FROM generate_series(1, n) o;
    WHILE i < n LOOP
        IF n - i >= 100 THEN
            RETURN QUERY INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key) VALUES
                (p_queue_id, vis[i + 1], exps[i + 1], p_bodies[i + 1], p_headers[i + 1], p_groups[i + 1]),
                (p_queue_id, vis[i + 2], exps[i + 2], p_bodies[i + 2], p_headers[i + 2], p_groups[i + 2]),
                (p_queue_id, vis[i + 3], exps[i + 3], p_bodies[i + 3], p_headers[i + 3], p_groups[i + 3]),
                (p_queue_id, vis[i + 4], exps[i + 4], p_bodies[i + 4], p_headers[i + 4], p_groups[i + 4]),
                (p_queue_id, vis[i + 5], exps[i + 5], p_bodies[i + 5], p_headers[i + 5], p_groups[i + 5]),
                (p_queue_id, vis[i + 6], exps[i + 6], p_bodies[i + 6], p_headers[i + 6], p_groups[i + 6]),
                (p_queue_id, vis[i + 7], exps[i + 7], p_bodies[i + 7], p_headers[i + 7], p_groups[i + 7]),
                (p_queue_id, vis[i + 8], exps[i + 8], p_bodies[i + 8], p_headers[i + 8], p_groups[i + 8]),
                (p_queue_id, vis[i + 9], exps[i + 9], p_bodies[i + 9], p_headers[i + 9], p_groups[i + 9]),
                (p_queue_id, vis[i + 10], exps[i + 10], p_bodies[i + 10], p_headers[i + 10], p_groups[i + 10]),
                (p_queue_id, vis[i + 11], exps[i + 11], p_bodies[i + 11], p_headers[i + 11], p_groups[i + 11]),
                (p_queue_id, vis[i + 12], exps[i + 12], p_bodies[i + 12], p_headers[i + 12], p_groups[i + 12]),
                (p_queue_id, vis[i + 13], exps[i + 13], p_bodies[i + 13], p_headers[i + 13], p_groups[i + 13]),
                (p_queue_id, vis[i + 14], exps[i + 14], p_bodies[i + 14], p_headers[i + 14], p_groups[i + 14]),
                (p_queue_id, vis[i + 15], exps[i + 15], p_bodies[i + 15], p_headers[i + 15], p_groups[i + 15]),
                (p_queue_id, vis[i + 16], exps[i + 16], p_bodies[i + 16], p_headers[i + 16], p_groups[i + 16]),
                (p_queue_id, vis[i + 17], exps[i + 17], p_bodies[i + 17], p_headers[i + 17], p_groups[i + 17]),
                (p_queue_id, vis[i + 18], exps[i + 18], p_bodies[i + 18], p_headers[i + 18], p_groups[i + 18]),
                (p_queue_id, vis[i + 19], exps[i + 19], p_bodies[i + 19], p_headers[i + 19], p_groups[i + 19]),
                (p_queue_id, vis[i + 20], exps[i + 20], p_bodies[i + 20], p_headers[i + 20], p_groups[i + 20]),
                (p_queue_id, vis[i + 21], exps[i + 21], p_bodies[i + 21], p_headers[i + 21], p_groups[i + 21]),
                (p_queue_id, vis[i + 22], exps[i + 22], p_bodies[i + 22], p_headers[i + 22], p_groups[i + 22]),
                (p_queue_id, vis[i + 23], exps[i + 23], p_bodies[i + 23], p_headers[i + 23], p_groups[i + 23]),
                (p_queue_id, vis[i + 24], exps[i + 24], p_bodies[i + 24], p_headers[i + 24], p_groups[i + 24]),
                (p_queue_id, vis[i + 25], exps[i + 25], p_bodies[i + 25], p_headers[i + 25], p_groups[i + 25]),
                (p_queue_id, vis[i + 26], exps[i + 26], p_bodies[i + 26], p_headers[i + 26], p_groups[i + 26]),
                (p_queue_id, vis[i + 27], exps[i + 27], p_bodies[i + 27], p_headers[i + 27], p_groups[i + 27]),
                (p_queue_id, vis[i + 28], exps[i + 28], p_bodies[i + 28], p_headers[i + 28], p_groups[i + 28]),
                (p_queue_id, vis[i + 29], exps[i + 29], p_bodies[i + 29], p_headers[i + 29], p_groups[i + 29]),
                (p_queue_id, vis[i + 30], exps[i + 30], p_bodies[i + 30], p_headers[i + 30], p_groups[i + 30]),
                (p_queue_id, vis[i + 31], exps[i + 31], p_bodies[i + 31], p_headers[i + 31], p_groups[i + 31]),
                (p_queue_id, vis[i + 32], exps[i + 32], p_bodies[i + 32], p_headers[i + 32], p_groups[i + 32]),
                (p_queue_id, vis[i + 33], exps[i + 33], p_bodies[i + 33], p_headers[i + 33], p_groups[i + 33]),
                (p_queue_id, vis[i + 34], exps[i + 34], p_bodies[i + 34], p_headers[i + 34], p_groups[i + 34]),
                (p_queue_id, vis[i + 35], exps[i + 35], p_bodies[i + 35], p_headers[i + 35], p_groups[i + 35]),
                (p_queue_id, vis[i + 36], exps[i + 36], p_bodies[i + 36], p_headers[i + 36], p_groups[i + 36]),
                (p_queue_id, vis[i + 37], exps[i + 37], p_bodies[i + 37], p_headers[i + 37], p_groups[i + 37]),
                (p_queue_id, vis[i + 38], exps[i + 38], p_bodies[i + 38], p_headers[i + 38], p_groups[i + 38]),
                (p_queue_id, vis[i + 39], exps[i + 39], p_bodies[i + 39], p_headers[i + 39], p_groups[i + 39]),
                (p_queue_id, vis[i + 40], exps[i + 40], p_bodies[i + 40], p_headers[i + 40], p_groups[i + 40]),
                (p_queue_id, vis[i + 41], exps[i + 41], p_bodies[i + 41], p_headers[i + 41], p_groups[i + 41]),
                (p_queue_id, vis[i + 42], exps[i + 42], p_bodies[i + 42], p_headers[i + 42], p_groups[i + 42]),
                (p_queue_id, vis[i + 43], exps[i + 43], p_bodies[i + 43], p_headers[i + 43], p_groups[i + 43]),
                (p_queue_id, vis[i + 44], exps[i + 44], p_bodies[i + 44], p_headers[i + 44], p_groups[i + 44]),
                (p_queue_id, vis[i + 45], exps[i + 45], p_bodies[i + 45], p_headers[i + 45], p_groups[i + 45]),
                (p_queue_id, vis[i + 46], exps[i + 46], p_bodies[i + 46], p_headers[i + 46], p_groups[i + 46]),
                (p_queue_id, vis[i + 47], exps[i + 47], p_bodies[i + 47], p_headers[i + 47], p_groups[i + 47]),
                (p_queue_id, vis[i + 48], exps[i + 48], p_bodies[i + 48], p_headers[i + 48], p_groups[i + 48]),
                (p_queue_id, vis[i + 49], exps[i + 49], p_bodies[i + 49], p_headers[i + 49], p_groups[i + 49]),
                (p_queue_id, vis[i + 50], exps[i + 50], p_bodies[i + 50], p_headers[i + 50], p_groups[i + 50]),
                (p_queue_id, vis[i + 51], exps[i + 51], p_bodies[i + 51], p_headers[i + 51], p_groups[i + 51]),
                (p_queue_id, vis[i + 52], exps[i + 52], p_bodies[i + 52], p_headers[i + 52], p_groups[i + 52]),
                (p_queue_id, vis[i + 53], exps[i + 53], p_bodies[i + 53], p_headers[i + 53], p_groups[i + 53]),
                (p_queue_id, vis[i + 54], exps[i + 54], p_bodies[i + 54], p_headers[i + 54], p_groups[i + 54]),
                (p_queue_id, vis[i + 55], exps[i + 55], p_bodies[i + 55], p_headers[i + 55], p_groups[i + 55]),
                (p_queue_id, vis[i + 56], exps[i + 56], p_bodies[i + 56], p_headers[i + 56], p_groups[i + 56]),
                (p_queue_id, vis[i + 57], exps[i + 57], p_bodies[i + 57], p_headers[i + 57], p_groups[i + 57]),
                (p_queue_id, vis[i + 58], exps[i + 58], p_bodies[i + 58], p_headers[i + 58], p_groups[i + 58]),
                (p_queue_id, vis[i + 59], exps[i + 59], p_bodies[i + 59], p_headers[i + 59], p_groups[i + 59]),
                (p_queue_id, vis[i + 60], exps[i + 60], p_bodies[i + 60], p_headers[i + 60], p_groups[i + 60]),
                (p_queue_id, vis[i + 61], exps[i + 61], p_bodies[i + 61], p_headers[i + 61], p_groups[i + 61]),
                (p_queue_id, vis[i + 62], exps[i + 62], p_bodies[i + 62], p_headers[i + 62], p_groups[i + 62]),
                (p_queue_id, vis[i + 63], exps[i + 63], p_bodies[i + 63], p_headers[i + 63], p_groups[i + 63]),
                (p_queue_id, vis[i + 64], exps[i + 64], p_bodies[i + 64], p_headers[i + 64], p_groups[i + 64]),
                (p_queue_id, vis[i + 65], exps[i + 65], p_bodies[i + 65], p_headers[i + 65], p_groups[i + 65]),
                (p_queue_id, vis[i + 66], exps[i + 66], p_bodies[i + 66], p_headers[i + 66], p_groups[i + 66]),
                (p_queue_id, vis[i + 67], exps[i + 67], p_bodies[i + 67], p_headers[i + 67], p_groups[i + 67]),
                (p_queue_id, vis[i + 68], exps[i + 68], p_bodies[i + 68], p_headers[i + 68], p_groups[i + 68]),
                (p_queue_id, vis[i + 69], exps[i + 69], p_bodies[i + 69], p_headers[i + 69], p_groups[i + 69]),
                (p_queue_id, vis[i + 70], exps[i + 70], p_bodies[i + 70], p_headers[i + 70], p_groups[i + 70]),
                (p_queue_id, vis[i + 71], exps[i + 71], p_bodies[i + 71], p_headers[i + 71], p_groups[i + 71]),
                (p_queue_id, vis[i + 72], exps[i + 72], p_bodies[i + 72], p_headers[i + 72], p_groups[i + 72]),
                (p_queue_id, vis[i + 73], exps[i + 73], p_bodies[i + 73], p_headers[i + 73], p_groups[i + 73]),
                (p_queue_id, vis[i + 74], exps[i + 74], p_bodies[i + 74], p_headers[i + 74], p_groups[i + 74]),
                (p_queue_id, vis[i + 75], exps[i + 75], p_bodies[i + 75], p_headers[i + 75], p_groups[i + 75]),
                (p_queue_id, vis[i + 76], exps[i + 76], p_bodies[i + 76], p_headers[i + 76], p_groups[i + 76]),
                (p_queue_id, vis[i + 77], exps[i + 77], p_bodies[i + 77], p_headers[i + 77], p_groups[i + 77]),
                (p_queue_id, vis[i + 78], exps[i + 78], p_bodies[i + 78], p_headers[i + 78], p_groups[i + 78]),
                (p_queue_id, vis[i + 79], exps[i + 79], p_bodies[i + 79], p_headers[i + 79], p_groups[i + 79]),
                (p_queue_id, vis[i + 80], exps[i + 80], p_bodies[i + 80], p_headers[i + 80], p_groups[i + 80]),
                (p_queue_id, vis[i + 81], exps[i + 81], p_bodies[i + 81], p_headers[i + 81], p_groups[i + 81]),
                (p_queue_id, vis[i + 82], exps[i + 82], p_bodies[i + 82], p_headers[i + 82], p_groups[i + 82]),
                (p_queue_id, vis[i + 83], exps[i + 83], p_bodies[i + 83], p_headers[i + 83], p_groups[i + 83]),
                (p_queue_id, vis[i + 84], exps[i + 84], p_bodies[i + 84], p_headers[i + 84], p_groups[i + 84]),
                (p_queue_id, vis[i + 85], exps[i + 85], p_bodies[i + 85], p_headers[i + 85], p_groups[i + 85]),
                (p_queue_id, vis[i + 86], exps[i + 86], p_bodies[i + 86], p_headers[i + 86], p_groups[i + 86]),
                (p_queue_id, vis[i + 87], exps[i + 87], p_bodies[i + 87], p_headers[i + 87], p_groups[i + 87]),
                (p_queue_id, vis[i + 88], exps[i + 88], p_bodies[i + 88], p_headers[i + 88], p_groups[i + 88]),
                (p_queue_id, vis[i + 89], exps[i + 89], p_bodies[i + 89], p_headers[i + 89], p_groups[i + 89]),
                (p_queue_id, vis[i + 90], exps[i + 90], p_bodies[i + 90], p_headers[i + 90], p_groups[i + 90]),
                (p_queue_id, vis[i + 91], exps[i + 91], p_bodies[i + 91], p_headers[i + 91], p_groups[i + 91]),
                (p_queue_id, vis[i + 92], exps[i + 92], p_bodies[i + 92], p_headers[i + 92], p_groups[i + 92]),
                (p_queue_id, vis[i + 93], exps[i + 93], p_bodies[i + 93], p_headers[i + 93], p_groups[i + 93]),
                (p_queue_id, vis[i + 94], exps[i + 94], p_bodies[i + 94], p_headers[i + 94], p_groups[i + 94]),
                (p_queue_id, vis[i + 95], exps[i + 95], p_bodies[i + 95], p_headers[i + 95], p_groups[i + 95]),
                (p_queue_id, vis[i + 96], exps[i + 96], p_bodies[i + 96], p_headers[i + 96], p_groups[i + 96]),
                (p_queue_id, vis[i + 97], exps[i + 97], p_bodies[i + 97], p_headers[i + 97], p_groups[i + 97]),
                (p_queue_id, vis[i + 98], exps[i + 98], p_bodies[i + 98], p_headers[i + 98], p_groups[i + 98]),
                (p_queue_id, vis[i + 99], exps[i + 99], p_bodies[i + 99], p_headers[i + 99], p_groups[i + 99]),
                (p_queue_id, vis[i + 100], exps[i + 100], p_bodies[i + 100], p_headers[i + 100], p_groups[i + 100])
            RETURNING sequence;
            i := i + 100;
        ELSIF n - i >= 10 THEN
            RETURN QUERY INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key) VALUES
                (p_queue_id, vis[i + 1], exps[i + 1], p_bodies[i + 1], p_headers[i + 1], p_groups[i + 1]),
                (p_queue_id, vis[i + 2], exps[i + 2], p_bodies[i + 2], p_headers[i + 2], p_groups[i + 2]),
                (p_queue_id, vis[i + 3], exps[i + 3], p_bodies[i + 3], p_headers[i + 3], p_groups[i + 3]),
                (p_queue_id, vis[i + 4], exps[i + 4], p_bodies[i + 4], p_headers[i + 4], p_groups[i + 4]),
                (p_queue_id, vis[i + 5], exps[i + 5], p_bodies[i + 5], p_headers[i + 5], p_groups[i + 5]),
                (p_queue_id, vis[i + 6], exps[i + 6], p_bodies[i + 6], p_headers[i + 6], p_groups[i + 6]),
                (p_queue_id, vis[i + 7], exps[i + 7], p_bodies[i + 7], p_headers[i + 7], p_groups[i + 7]),
                (p_queue_id, vis[i + 8], exps[i + 8], p_bodies[i + 8], p_headers[i + 8], p_groups[i + 8]),
                (p_queue_id, vis[i + 9], exps[i + 9], p_bodies[i + 9], p_headers[i + 9], p_groups[i + 9]),
                (p_queue_id, vis[i + 10], exps[i + 10], p_bodies[i + 10], p_headers[i + 10], p_groups[i + 10])
            RETURNING sequence;
            i := i + 10;
        ELSIF n - i >= 5 THEN
            RETURN QUERY INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key) VALUES
                (p_queue_id, vis[i + 1], exps[i + 1], p_bodies[i + 1], p_headers[i + 1], p_groups[i + 1]),
                (p_queue_id, vis[i + 2], exps[i + 2], p_bodies[i + 2], p_headers[i + 2], p_groups[i + 2]),
                (p_queue_id, vis[i + 3], exps[i + 3], p_bodies[i + 3], p_headers[i + 3], p_groups[i + 3]),
                (p_queue_id, vis[i + 4], exps[i + 4], p_bodies[i + 4], p_headers[i + 4], p_groups[i + 4]),
                (p_queue_id, vis[i + 5], exps[i + 5], p_bodies[i + 5], p_headers[i + 5], p_groups[i + 5])
            RETURNING sequence;
            i := i + 5;
        ELSIF n - i >= 2 THEN
            RETURN QUERY INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key) VALUES
                (p_queue_id, vis[i + 1], exps[i + 1], p_bodies[i + 1], p_headers[i + 1], p_groups[i + 1]),
                (p_queue_id, vis[i + 2], exps[i + 2], p_bodies[i + 2], p_headers[i + 2], p_groups[i + 2])
            RETURNING sequence;
            i := i + 2;
        ELSE
            RETURN QUERY INSERT INTO messages (queue_id, visible_at, expires_at, body, headers, group_key) VALUES
                (p_queue_id, vis[i + 1], exps[i + 1], p_bodies[i + 1], p_headers[i + 1], p_groups[i + 1])
            RETURNING sequence;
            i := i + 1;
        END IF;
    END LOOP;
    IF EXISTS (SELECT 1 FROM wake_interest w WHERE w.queue_id = p_queue_id AND w.until > now()) THEN
        PERFORM pg_notify(current_schema() || '_wake', p_account || '/' || p_queue);
    END IF;
END
$$;

-- Send a batch (see queue_send_batch).
CREATE OR REPLACE FUNCTION account_send_batch(p_account text, p_queue text, p_bodies jsonb[], p_delay_seconds integer DEFAULT 0,
                                              p_headers jsonb[] DEFAULT NULL, p_delays integer[] DEFAULT NULL,
                                              p_expires_in integer[] DEFAULT NULL, p_dedup_keys text[] DEFAULT NULL,
                                              p_groups text[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
BEGIN
    SELECT q.id INTO qid FROM queues q WHERE q.account = p_account AND q.name = p_queue;
    RETURN QUERY SELECT s FROM queue_send_batch(qid, p_account, p_queue, p_bodies, p_delay_seconds, p_headers,
                                                p_delays, p_expires_in, p_dedup_keys, p_groups) s;
END
$$;

-- group_key puts every message of the batch into that group, in array order.
CREATE OR REPLACE FUNCTION send_batch(queue text, bodies jsonb[], delay_seconds integer DEFAULT 0,
                                      group_key text DEFAULT NULL) RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
BEGIN
    SELECT q.id INTO qid FROM queues q WHERE q.account = '000000000001' AND q.name = send_batch.queue;
    RETURN QUERY SELECT s FROM queue_send_batch(qid, '000000000001', queue, bodies, delay_seconds,
                                                NULL, NULL, NULL, NULL,
                                                CASE WHEN group_key IS NULL THEN NULL
                                                     ELSE array_fill(group_key, ARRAY[cardinality(bodies)]) END) s;
END
$$;
