-- kv_entries, kv_bytes: what the account's key-value stores may hold
-- together (entries; bytes of keys plus values); NULL takes the server's
-- default (Config.Limits.KVEntries, KVBytes). Package kv counts and
-- enforces it (its migration 002).
ALTER TABLE account_limits ADD COLUMN kv_entries bigint CHECK (kv_entries >= 0);
ALTER TABLE account_limits ADD COLUMN kv_bytes bigint CHECK (kv_bytes >= 0);
