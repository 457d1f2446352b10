ALTER TABLE account_limits DROP COLUMN kv_bytes;
ALTER TABLE account_limits DROP COLUMN kv_entries;
