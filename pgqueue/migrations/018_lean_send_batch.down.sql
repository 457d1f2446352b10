-- Back to 015: send_batch reads the queue's id and hands every batch to
-- queue_send_batch.
CREATE OR REPLACE FUNCTION send_batch(queue text, bodies jsonb[], delay_seconds integer DEFAULT 0,
                                      group_key text DEFAULT NULL) RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
BEGIN
    SELECT q.id INTO qid FROM queues q WHERE q.account = '000000000001' AND q.name = send_batch.queue;
    RETURN QUERY SELECT s FROM queue_send_batch(qid, '000000000001', queue, bodies, delay_seconds,
                                                NULL, NULL, NULL, NULL,
                                                CASE WHEN group_key IS NULL THEN NULL
                                                     ELSE array_fill(group_key, ARRAY[cardinality(bodies)]) END) s;
END
$$;
