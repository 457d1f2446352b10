-- kv_within_quota as migration 002 made it: no lock, the caller's snapshot.

CREATE OR REPLACE FUNCTION kv_within_quota(p_account text, p_store text, p_key bytea, p_new_size bigint,
                                p_max_entries bigint, p_max_bytes bigint) RETURNS boolean
LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
DECLARE
    used_entries bigint;
    used_bytes bigint;
    old_size bigint;
BEGIN
    IF p_max_entries = 0 AND p_max_bytes = 0 THEN
        RETURN true;
    END IF;
    SELECT (SELECT octet_length(e.key) + octet_length(e.value)
              FROM kv_entries e
             WHERE e.account = p_account AND e.store = p_store AND e.key = p_key),
           coalesce(sum(u.entries), 0), coalesce(sum(u.bytes), 0)
      INTO old_size, used_entries, used_bytes
      FROM kv_usage u WHERE u.account = p_account;
    IF old_size IS NOT NULL AND p_new_size <= old_size THEN
        RETURN true;
    END IF;
    RETURN (p_max_entries = 0 OR used_entries + CASE WHEN old_size IS NULL THEN 1 ELSE 0 END <= p_max_entries)
       AND (p_max_bytes = 0 OR used_bytes - coalesce(old_size, 0) + p_new_size <= p_max_bytes);
END
$$;
