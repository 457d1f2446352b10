-- Per-minute queue statistics (the console's Overview chart): for each queue
-- and minute, the messages sent, acknowledged and moved to the DLQ, and a
-- sample of the queue's depth. Applied like 001 (search_path set to the
-- target schema).
--
-- Sends and acks are not counted here: a counter row updated by every
-- sender would serialize senders (and a long transaction holding it would
-- block them). pgqueue.Client counts the sends and acks it makes in memory
-- and its Sweeper adds them once a minute with add_minute_counts (see
-- pgqueue/queries.sql). Moves to the DLQ are rarer and happen in SQL, so
-- sweep() and account_fail count them in the statement that moves them.
-- Depths are sampled once a minute by sample_depths(). Rows are kept 24
-- hours.

CREATE TABLE queue_minutes (
    queue_id  bigint      NOT NULL,
    -- the start of the minute, in UTC
    minute    timestamptz NOT NULL,
    sends     bigint      NOT NULL DEFAULT 0,
    acks      bigint      NOT NULL DEFAULT 0,
    dlq_moves bigint      NOT NULL DEFAULT 0,
    -- the depth sample, NULL when none was taken in the minute
    ready     bigint,
    inflight  bigint,
    delayed   bigint,
    dlq       bigint,
    PRIMARY KEY (queue_id, minute)
);

CREATE INDEX queue_minutes_minute ON queue_minutes (minute);

-- The minutes in which some process took the depth sample.
CREATE TABLE depth_samples (
    minute timestamptz PRIMARY KEY
);

-- The start of the current minute (of the database clock, in UTC).
CREATE FUNCTION current_minute() RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT date_trunc('minute', now(), 'UTC')
$$;

-- Add one DLQ move per element of p_queue_ids (a queue id per message) to
-- the current minute. Rows are locked in queue id order.
CREATE FUNCTION count_dlq_moves(p_queue_ids bigint[]) RETURNS void
LANGUAGE sql SET search_path FROM CURRENT AS $$
    INSERT INTO queue_minutes AS qm (queue_id, minute, dlq_moves)
    SELECT queue_id, current_minute(), count(*)
      FROM unnest(p_queue_ids) AS queue_id
     GROUP BY queue_id
     ORDER BY queue_id
    ON CONFLICT (queue_id, minute) DO UPDATE SET dlq_moves = qm.dlq_moves + excluded.dlq_moves
$$;

-- Record every queue's depth (as queue_stats counts it) in the current
-- minute's row, and forget statistics older than 24 hours. Only the first
-- call in a minute samples, whichever process makes it, unless p_force.
-- Returns the number of queues sampled.
CREATE FUNCTION sample_depths(p_force boolean DEFAULT false) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    m timestamptz := current_minute();
    n bigint;
BEGIN
    INSERT INTO depth_samples (minute) VALUES (m) ON CONFLICT DO NOTHING;
    IF NOT FOUND AND NOT p_force THEN
        RETURN 0;
    END IF;
    INSERT INTO queue_minutes AS qm (queue_id, minute, ready, inflight, delayed, dlq)
    SELECT s.queue_id, m, s.ready, s.inflight, s.delayed, s.dlq
      FROM queue_stats s
     ORDER BY s.queue_id
    ON CONFLICT (queue_id, minute) DO UPDATE
       SET ready = excluded.ready, inflight = excluded.inflight, delayed = excluded.delayed, dlq = excluded.dlq;
    GET DIAGNOSTICS n = ROW_COUNT;
    DELETE FROM queue_minutes WHERE minute <= m - interval '24 hours';
    DELETE FROM depth_samples WHERE minute <= m - interval '24 hours';
    RETURN n;
END
$$;

-- One sweep: move messages whose last allowed lease expired to the DLQ
-- (reason 'max_receive_count', last_error kept), delete expired messages
-- (TTL) and messages and dead letters past retention, and forget expired
-- dedup keys. Each step handles at most 10,000 rows per call. Only one
-- session sweeps a schema at a time; concurrent callers return 0 at once.
-- Moves to the DLQ are counted in queue_minutes (003).
-- Returns the number of messages moved or removed.
CREATE OR REPLACE FUNCTION sweep() RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    total bigint := 0;
    n bigint;
    moved_to_dlq bigint[];
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
    ), ins AS (
        INSERT INTO dead_letters (queue_id, sequence, body, headers, receive_count, created_at, expires_at, reason, last_error)
        SELECT queue_id, sequence, body, headers, receive_count, created_at, expires_at, 'max_receive_count', last_error
          FROM moved
        ON CONFLICT (queue_id, sequence) DO NOTHING
        RETURNING queue_id
    )
    SELECT array_agg(queue_id) INTO moved_to_dlq FROM ins;
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

-- Fail many messages permanently: they move to the DLQ at once with the
-- given reason (default 'permanent_failure') and error. Returns the
-- sequences moved; stale receipts are skipped. Moves are counted in
-- queue_minutes (003).
CREATE OR REPLACE FUNCTION account_fail(p_account text, p_queue text, p_sequences bigint[], p_receipts uuid[] DEFAULT NULL,
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
        RETURNING 1
    ), counted AS (
        INSERT INTO queue_minutes AS qm (queue_id, minute, dlq_moves)
        SELECT qid, current_minute(), count(*) FROM ins HAVING count(*) > 0
        ON CONFLICT (queue_id, minute) DO UPDATE SET dlq_moves = qm.dlq_moves + excluded.dlq_moves
    )
    SELECT moved.sequence FROM moved;
END
$$;
