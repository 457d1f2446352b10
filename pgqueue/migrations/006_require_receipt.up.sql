-- require_receipt: a queue may refuse to delete a leased (received, lease
-- not yet expired) message without the receipt of that lease, so that a
-- key that can delete cannot ack messages another consumer holds. Off by
-- default. Set with account_set_require_receipt (the Go API's
-- Settings.RequireReceipt and the HTTP API's "require_receipt").

ALTER TABLE queues ADD COLUMN require_receipt boolean NOT NULL DEFAULT false;

CREATE FUNCTION account_set_require_receipt(p_account text, p_queue text, p_on boolean) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE queues SET require_receipt = coalesce(p_on, false), updated_at = now()
     WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
END
$$;

-- As in 001, and with require_receipt a delete without a receipt skips a
-- leased message and raises SQ005.
CREATE OR REPLACE FUNCTION account_delete(p_account text, p_queue text, p_sequence bigint, p_receipt uuid DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
    required boolean;
    current_receipt uuid;
BEGIN
    SELECT id, require_receipt INTO qid, required FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_receipt IS NULL THEN
        DELETE FROM messages
         WHERE queue_id = qid AND sequence = p_sequence
           AND NOT (required AND receive_count > 0 AND visible_at > now());
        IF FOUND THEN
            RETURN true;
        END IF;
        IF required THEN
            PERFORM 1 FROM messages WHERE queue_id = qid AND sequence = p_sequence;
            IF FOUND THEN
                PERFORM raise_error('SQ005', format('message %s of queue %s is leased and the queue requires a receipt to delete it: give the receipt of the receive',
                                                    p_sequence, to_json(p_queue)::text));
            END IF;
        END IF;
        RETURN false;
    END IF;
    DELETE FROM messages WHERE queue_id = qid AND sequence = p_sequence AND receipt = p_receipt;
    IF FOUND THEN
        RETURN true;
    END IF;
    SELECT receipt INTO current_receipt FROM messages WHERE queue_id = qid AND sequence = p_sequence;
    IF FOUND THEN
        PERFORM raise_error('SQ006', format('stale receipt %s for message %s in queue %s: the message was received again since; use the latest receipt',
                                            p_receipt, p_sequence, to_json(p_queue)::text));
    END IF;
    RETURN false;
END
$$;
