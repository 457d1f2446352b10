ALTER TABLE account_limits DROP COLUMN guest_memory_mb;
