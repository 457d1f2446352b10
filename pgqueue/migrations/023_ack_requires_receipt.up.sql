-- Batch acks honour require_receipt (006) as the single delete does.
--
-- queue_ack (and so account_ack, the Go API's Ack, and the trigger
-- engine's settlements) deleted a leased message without its receipt even
-- on a queue with require_receipt: a caller of the SQL API could so ack
-- what another consumer holds, which the single delete refuses. Now, on
-- such a queue, a sequence given without a receipt (p_receipts NULL, or a
-- NULL entry) is deleted only if the message is not leased; if any of the
-- call's messages is leased and came without a receipt, the call fails
-- (SQ005, naming the message) and acks none of them, so a caller learns of
-- its mistake instead of half an ack. The test is in the DELETE's own
-- condition, so a message leased by another consumer while the DELETE
-- waits for its row is kept (and then refused), as in queue_delete.
-- Queues without require_receipt, and calls that give every message its
-- receipt (the trigger engine's), take the statements of 019 unchanged.
-- (One call's own cost, 10 sequences, in one backend: 23 µs as before
-- without the setting; 48 µs with it and no receipts; BENCHMARKS.md,
-- "Migration 023".)

CREATE OR REPLACE FUNCTION queue_ack(p_queue_id bigint, p_account text, p_queue text, p_sequences bigint[],
                          p_receipts uuid[] DEFAULT NULL, p_async_commit boolean DEFAULT false)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT SET random_page_cost = 1.1 AS $$
DECLARE
    required boolean;
    unfenced bigint;
BEGIN
    SELECT require_receipt INTO required
      FROM queues WHERE id = p_queue_id AND account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF cardinality(p_sequences) > 1 AND EXISTS (SELECT 1 FROM message_groups g WHERE g.queue_id = p_queue_id) THEN
        PERFORM lock_groups_of(p_queue_id, p_sequences);
    END IF;
    IF p_async_commit THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    IF required AND (p_receipts IS NULL OR cardinality(p_receipts) < cardinality(p_sequences)
                     OR array_position(p_receipts, NULL) IS NOT NULL) THEN
        RETURN QUERY
        DELETE FROM messages m
         USING unnest(p_sequences, p_receipts) AS a(sequence, receipt)
         WHERE m.queue_id = p_queue_id AND m.sequence = a.sequence
           -- (Not a CASE: Citus refuses now() inside one.)
           AND (m.receipt = a.receipt
                OR (a.receipt IS NULL AND NOT (m.receive_count > 0 AND m.visible_at > now())))
        RETURNING m.sequence;
        SELECT m.sequence INTO unfenced
          FROM unnest(p_sequences, p_receipts) AS a(sequence, receipt)
          JOIN messages m ON m.queue_id = p_queue_id AND m.sequence = a.sequence
         WHERE a.receipt IS NULL AND m.receive_count > 0 AND m.visible_at > now()
         ORDER BY m.sequence
         LIMIT 1;
        IF FOUND THEN
            PERFORM raise_error('SQ005', format('message %s of queue %s is leased and the queue requires a receipt to acknowledge it: give the receipts of the receive',
                                                unfenced, to_json(p_queue)::text));
        END IF;
        RETURN;
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
