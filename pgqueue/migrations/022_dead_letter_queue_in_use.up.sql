-- A queue that another queue names as its dead_letter_queue cannot be
-- deleted (SQ012, queue in use).
--
-- Until now deleting it cleared the other queue's setting (the foreign
-- key's ON DELETE SET NULL), and that queue's dead letters went back to
-- the dead-letter table without a word. Whoever could delete one queue so
-- changed another's configuration: a key allowed to delete "a*" could
-- clear the dead_letter_queue of "orders". Now the delete is refused,
-- naming the queues that use it; clear or change their dead_letter_queue
-- first (SQS users know the rule from redrive policies).
--
-- The queue's row is locked before the check: a concurrent update that
-- names it commits first (the lock waits for it, and the check, a
-- statement of its own, sees it) or fails on the foreign key once the
-- delete commits. The foreign key keeps ON DELETE SET NULL only as the
-- operator's way out (a DELETE FROM queues by hand).

CREATE OR REPLACE FUNCTION account_delete_queue(p_account text, p_name text) RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
    users text;
BEGIN
    SELECT id INTO qid FROM queues WHERE account = p_account AND name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM check_name('queue', p_name);
        RETURN false;
    END IF;
    SELECT string_agg(to_json(name)::text, ', ' ORDER BY name) INTO users
      FROM queues WHERE dead_letter_queue_id = qid;
    IF users IS NOT NULL THEN
        PERFORM raise_error('SQ012', format(
            'queue %s is the dead_letter_queue of %s in account %s: change or clear their dead_letter_queue first, then delete it',
            to_json(p_name)::text, users, p_account));
    END IF;
    DELETE FROM queues WHERE id = qid;
    DELETE FROM messages WHERE queue_id = qid;
    DELETE FROM dead_letters WHERE queue_id = qid;
    DELETE FROM dedup_keys WHERE queue_id = qid;
    DELETE FROM wake_interest WHERE queue_id = qid;
    RETURN true;
END
$$;
