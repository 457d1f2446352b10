-- Back to 001's account_delete_queue: deleting a dead_letter_queue clears
-- the setting of the queues that named it.
CREATE OR REPLACE FUNCTION account_delete_queue(p_account text, p_name text) RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
BEGIN
    DELETE FROM queues WHERE account = p_account AND name = p_name RETURNING id INTO qid;
    IF NOT FOUND THEN
        PERFORM check_name('queue', p_name);
        RETURN false;
    END IF;
    DELETE FROM messages WHERE queue_id = qid;
    DELETE FROM dead_letters WHERE queue_id = qid;
    DELETE FROM dedup_keys WHERE queue_id = qid;
    DELETE FROM wake_interest WHERE queue_id = qid;
    RETURN true;
END
$$;
