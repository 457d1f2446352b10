-- What each account's key-value stores hold, so that a write can be
-- refused past the account's quota (SECURITY.md: key-value entries and
-- bytes were not limited per account) without counting the entries.
--
-- A row trigger on kv_entries adds every insert, update and delete (the
-- sweeper's deletes of expired entries too) to kv_usage. An account has
-- up to 16 rows there, one per slot, a writer taking the slot of its
-- backend (pg_backend_pid() % 16): each write updates one counter row
-- until it commits, and writers on different connections rarely share
-- one, so an account's writes do not queue behind a single counter. The
-- account's usage is the sum of its rows. An entry counts from its insert
-- to its delete, expired or not (it takes its room until swept); its size
-- is its key's bytes plus its value's.

CREATE TABLE kv_usage (
    account text     NOT NULL REFERENCES accounts (number) ON DELETE CASCADE,
    slot    smallint NOT NULL,
    entries bigint   NOT NULL,
    bytes   bigint   NOT NULL,
    PRIMARY KEY (account, slot)
) WITH (fillfactor = 70);

CREATE FUNCTION kv_count() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    acct text;
    de bigint := 0;
    db bigint := 0;
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        acct := NEW.account;
        de := 1;
        db := octet_length(NEW.key) + octet_length(NEW.value);
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        acct := OLD.account;
        de := de - 1;
        db := db - octet_length(OLD.key) - octet_length(OLD.value);
    END IF;
    IF de <> 0 OR db <> 0 THEN
        UPDATE kv_usage u SET entries = u.entries + de, bytes = u.bytes + db
         WHERE u.account = acct AND u.slot = pg_backend_pid() % 16;
        IF NOT FOUND THEN
            INSERT INTO kv_usage AS u (account, slot, entries, bytes)
            VALUES (acct, pg_backend_pid() % 16, de, db)
            ON CONFLICT (account, slot) DO UPDATE SET entries = u.entries + excluded.entries, bytes = u.bytes + excluded.bytes;
        END IF;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER kv_count AFTER INSERT OR UPDATE OR DELETE ON kv_entries
    FOR EACH ROW EXECUTE FUNCTION kv_count();

INSERT INTO kv_usage (account, slot, entries, bytes)
SELECT account, 0, count(*), sum(octet_length(key) + octet_length(value))
  FROM kv_entries
 GROUP BY account;

-- Whether a write of an entry of new_size bytes at (account, store, key)
-- keeps the account within max_entries and max_bytes (0: no limit): the
-- account's usage, less what the key holds now, plus the new entry. A
-- write that grows nothing (the key exists and the new entry is no larger)
-- always passes, so an account over a lowered quota can still shrink.
--
-- plpgsql, not sql: a SQL function that cannot be inlined (this one reads
-- tables) plans its query again in every statement that calls it, which
-- cost a Set as much as the write (BENCHMARKS.md, "Key-value quota");
-- plpgsql keeps the plans for the session.
CREATE FUNCTION kv_within_quota(p_account text, p_store text, p_key bytea, p_new_size bigint,
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
