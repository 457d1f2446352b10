-- Back to 019's lock_groups.
CREATE OR REPLACE FUNCTION lock_groups(p_queue_id bigint, p_groups text[]) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO message_groups AS g (queue_id, group_key, size)
    SELECT DISTINCT p_queue_id, k, 0 FROM unnest(p_groups) k
     WHERE length(k) BETWEEN 1 AND 128
     ORDER BY 2
    ON CONFLICT (queue_id, group_key) DO UPDATE SET size = g.size;
END
$$;
