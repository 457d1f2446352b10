-- account_release gives back leases of messages that were received but
-- never handed to a consumer (a trigger's claim taken ahead of its batches,
-- released when the process stops or a batch waited too long for a slot).
-- Unlike a nack, the claim does not count as a delivery: the message is
-- visible again at once with the receive count it had before the claim,
-- so it neither loses an attempt nor, on what was its final lease, goes to
-- the dead-letter queue without having run. Only leases still held with
-- the given receipts are released, and those receipts stop being current
-- (a late ack with one is refused); it returns their sequences.
CREATE FUNCTION account_release(p_account text, p_queue text, p_sequences bigint[], p_receipts uuid[])
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
    t timestamptz := now();
BEGIN
    qid := queue_id(p_account, p_queue);
    RETURN QUERY
    UPDATE messages m
       SET visible_at = t,
           receive_count = greatest(m.receive_count - 1, 0),
           final_lease = false,
           receipt = NULL
      FROM unnest(p_sequences, p_receipts) AS a(sequence, receipt)
     WHERE m.queue_id = qid AND m.sequence = a.sequence
       AND m.receipt = a.receipt AND m.visible_at > t
    RETURNING m.sequence;
    PERFORM wake(qid, p_account, p_queue);
END
$$;
