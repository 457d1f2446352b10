-- Back to 011: the LANGUAGE sql wrappers, account_send_batch of 008 and
-- account_receive of 010.
DROP FUNCTION send_batch(text, jsonb[], integer, text);
DROP FUNCTION receive(text, integer, integer);
DROP FUNCTION account_send_batch(text, text, jsonb[], integer, jsonb[], integer[], integer[], text[], text[]);

COMMENT ON FUNCTION send_batch_full(text, text, jsonb[], integer, jsonb[], integer[], integer[], text[], text[]) IS NULL;
ALTER FUNCTION send_batch_full(text, text, jsonb[], integer, jsonb[], integer[], integer[], text[], text[])
    RENAME TO account_send_batch;

-- group_key puts every message of the batch into that group, in array order.
CREATE FUNCTION send_batch(queue text, bodies jsonb[], delay_seconds integer DEFAULT 0,
                           group_key text DEFAULT NULL) RETURNS SETOF bigint
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_send_batch('000000000001', send_batch.queue, send_batch.bodies, send_batch.delay_seconds,
                              NULL, NULL, NULL, NULL,
                              CASE WHEN send_batch.group_key IS NULL THEN NULL
                                   ELSE array_fill(send_batch.group_key, ARRAY[cardinality(send_batch.bodies)]) END);
END;

CREATE OR REPLACE FUNCTION account_receive(p_account text, p_queue text, p_max_messages integer DEFAULT 1, p_visibility_timeout_seconds integer DEFAULT NULL::integer) RETURNS SETOF received_message
    LANGUAGE plpgsql
    SET search_path FROM CURRENT
    AS $$
DECLARE
    q queues;
    vt integer;
    -- One draw per call; each message's receipt is derived from it and the
    -- message's sequence, so the UPDATE calls no volatile function.
    lease uuid := gen_random_uuid();
BEGIN
    SELECT * INTO q FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_max_messages IS NULL OR p_max_messages < 1 OR p_max_messages > 1000 THEN
        PERFORM out_of_range('max_messages', p_max_messages, 1, 1000);
    END IF;
    vt := coalesce(p_visibility_timeout_seconds, q.visibility_timeout_seconds);
    IF vt < 0 OR vt > 43200 THEN
        PERFORM out_of_range('visibility_timeout_seconds', vt, 0, 43200);
    END IF;
    -- The same claim as in 008. Parked group members have visible_at =
    -- 'infinity', beyond the index range this walks.
    RETURN QUERY
    WITH leased AS (
        UPDATE messages m
           SET visible_at = now() + make_interval(secs => vt),
               receive_count = m.receive_count + 1,
               final_lease = (m.receive_count + 1 >= q.max_receive_count),
               receipt = md5(lease::text || m.sequence::text)::uuid
         WHERE m.queue_id = q.id
           AND m.sequence = ANY (ARRAY(
               SELECT c.sequence
                 FROM messages c
                WHERE c.queue_id = q.id
                  AND c.visible_at <= now()
                  AND c.receive_count < q.max_receive_count
                  AND (c.expires_at IS NULL OR c.expires_at > now())
                ORDER BY c.visible_at, c.sequence
                LIMIT p_max_messages
                  FOR UPDATE SKIP LOCKED))
        RETURNING m.sequence, m.body, m.headers, m.receive_count, m.created_at, m.visible_at, m.receipt, m.group_key
    )
    SELECT l.sequence, l.body, l.headers, l.receive_count, l.created_at, l.visible_at, l.receipt, l.group_key
      FROM leased l
     ORDER BY l.sequence;
END
$$;

CREATE FUNCTION receive(queue text, max_messages integer DEFAULT 1, visibility_timeout_seconds integer DEFAULT NULL)
RETURNS SETOF received_message
LANGUAGE sql
BEGIN ATOMIC
    SELECT * FROM account_receive('000000000001', receive.queue, receive.max_messages,
                                  receive.visibility_timeout_seconds);
END;
