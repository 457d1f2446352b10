ALTER TABLE account_limits DROP COLUMN message_bytes;
