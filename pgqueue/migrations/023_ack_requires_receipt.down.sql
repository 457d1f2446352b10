-- Back to 019's queue_ack: batch acks ignore require_receipt.
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
