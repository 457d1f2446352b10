DROP FUNCTION IF EXISTS account_set_require_receipt(text, text, boolean);

CREATE OR REPLACE FUNCTION account_delete(p_account text, p_queue text, p_sequence bigint, p_receipt uuid DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
    current_receipt uuid;
BEGIN
    SELECT id INTO qid FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_receipt IS NULL THEN
        DELETE FROM messages WHERE queue_id = qid AND sequence = p_sequence;
        RETURN FOUND;
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

ALTER TABLE queues DROP COLUMN IF EXISTS require_receipt;
