ALTER TABLE account_limits DROP COLUMN topics;
