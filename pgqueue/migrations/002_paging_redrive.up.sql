-- Paging through a queue's messages and dead letters by sequence, and
-- redriving chosen dead letters. Applied like 001 (search_path set to the
-- target schema).

-- Refuses a negative or NULL p_after and a p_max_messages outside 1-1000.
CREATE FUNCTION check_page(p_after bigint, p_max_messages integer) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF p_after IS NULL OR p_after < 0 THEN
        PERFORM out_of_range('after', p_after, 0, 9223372036854775807);
    END IF;
    IF p_max_messages IS NULL OR p_max_messages < 1 OR p_max_messages > 1000 THEN
        PERFORM out_of_range('max_messages', p_max_messages, 1, 1000);
    END IF;
END
$$;

-- Ready messages (those peek would show) with a sequence above p_after, in
-- sequence order, at most p_max_messages (1 to 1000). Page on with the last
-- sequence returned; a page shorter than asked is the last. Unlike peek the
-- order is by sequence, not by (visible_at, sequence), so pages neither
-- repeat nor skip messages.
CREATE FUNCTION account_peek_after(p_account text, p_queue text, p_after bigint, p_max_messages integer)
RETURNS SETOF received_message
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    q queues;
BEGIN
    SELECT * INTO q FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    PERFORM check_page(p_after, p_max_messages);
    RETURN QUERY
    SELECT m.sequence, m.body, m.headers, m.receive_count, m.created_at, m.visible_at, NULL::uuid
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

-- Dead letters with a sequence above p_after, in sequence order, at most
-- p_max_messages (1 to 1000).
CREATE FUNCTION account_receive_dlq_after(p_account text, p_queue text, p_after bigint, p_max_messages integer)
RETURNS SETOF dead_letter
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
BEGIN
    qid := queue_id(p_account, p_queue);
    PERFORM check_page(p_after, p_max_messages);
    RETURN QUERY
    SELECT d.sequence, d.body, d.headers, d.receive_count, d.created_at, d.failed_at, d.reason, d.last_error
      FROM dead_letters d
     WHERE d.queue_id = qid AND d.sequence > p_after
     ORDER BY d.sequence
     LIMIT p_max_messages;
END
$$;

-- Move the dead letters with the given sequences (1 to 1000; repeats count
-- once) back into their queue, like account_redrive. Sequences that are not
-- in the DLQ are ignored. Returns how many moved.
CREATE FUNCTION account_redrive_sequences(p_account text, p_queue text, p_sequences bigint[]) RETURNS bigint
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
