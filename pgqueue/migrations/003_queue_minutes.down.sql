-- Reverts 003_queue_minutes.up.sql: sweep() and account_fail as 001 made
-- them, then the statistics.

-- One sweep: move messages whose last allowed lease expired to the DLQ
-- (reason 'max_receive_count', last_error kept), delete expired messages
-- (TTL) and messages and dead letters past retention, and forget expired
-- dedup keys. Each step handles at most 10,000 rows per call. Only one
-- session sweeps a schema at a time; concurrent callers return 0 at once.
-- Returns the number of messages moved or removed.
CREATE OR REPLACE FUNCTION sweep() RETURNS bigint
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

-- Fail many messages permanently: they move to the DLQ at once with the
-- given reason (default 'permanent_failure') and error. Returns the
-- sequences moved; stale receipts are skipped.
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
    )
    SELECT moved.sequence FROM moved;
END
$$;

DROP FUNCTION sample_depths(boolean);
DROP FUNCTION count_dlq_moves(bigint[]);
DROP FUNCTION current_minute();
DROP TABLE depth_samples;
DROP TABLE queue_minutes;
