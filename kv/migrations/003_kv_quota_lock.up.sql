-- The key-value quota holds under concurrent writes (SECURITY.md's known
-- gap until now): kv_within_quota read the account's usage in the
-- snapshot of the statement that called it, so writes on several
-- connections at once each saw the room before any of them committed and
-- together passed the quota by as many as ran at once.
--
-- Now the check takes a transaction-level advisory lock of the account (in
-- this schema), held by the write until it commits, and is VOLATILE, so
-- that its reads take a new snapshot once it holds the lock:
--
-- * Far from the quota, the lock is shared and writers do not wait for
--   each other. "Far" means that even if every other connection the server
--   allows (max_connections) were a write in flight that this one cannot
--   see, each adding an entry of the largest size (a 1 KiB key and a 1 MiB
--   value, kv.MaxKeyBytes + kv.MaxValueBytes), the account would stay
--   within its quota.
-- * Nearer, it is exclusive: the write waits for the account's writes in
--   flight to commit and checks against all they wrote, one at a time.
--   The shared attempt is made in a block of its own (a subtransaction)
--   that ends in an exception when the account is not far from its quota,
--   which gives the shared lock back before the exclusive one is asked for
--   (holding both, two writers would deadlock).
--
-- Whichever write checks last, what it did not see is at most
-- max_connections writes in flight under the shared lock (none under the
-- exclusive one, which waited for them), each bounded as above: so the
-- stores hold at most the quota. Writes that do not call this (deletes,
-- the sweep) only shrink the stores. Writes through SQL without a quota
-- are the operator's and are not counted as in flight.

CREATE OR REPLACE FUNCTION kv_within_quota(p_account text, p_store text, p_key bytea, p_new_size bigint,
                                           p_max_entries bigint, p_max_bytes bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    lock_key int := hashtext(current_schema() || '.' || p_account);
    largest_entry constant bigint := 1024 + 1048576;
    in_flight bigint;
    used_entries bigint;
    used_bytes bigint;
    old_size bigint;
BEGIN
    IF p_max_entries = 0 AND p_max_bytes = 0 THEN
        RETURN true;
    END IF;
    BEGIN
        PERFORM pg_advisory_xact_lock_shared(hashtext('sluice.kv_quota'), lock_key);
        SELECT coalesce(sum(u.entries), 0), coalesce(sum(u.bytes), 0)
          INTO used_entries, used_bytes
          FROM kv_usage u WHERE u.account = p_account;
        in_flight := current_setting('max_connections')::bigint;
        IF p_new_size <= largest_entry
           AND (p_max_entries = 0 OR used_entries + in_flight <= p_max_entries)
           AND (p_max_bytes = 0 OR used_bytes + in_flight * largest_entry <= p_max_bytes) THEN
            RETURN true;
        END IF;
        RAISE EXCEPTION 'near the quota' USING ERRCODE = 'SQ900';
    EXCEPTION WHEN SQLSTATE 'SQ900' THEN
        NULL; -- the shared lock is given back with the block
    END;
    PERFORM pg_advisory_xact_lock(hashtext('sluice.kv_quota'), lock_key);
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
