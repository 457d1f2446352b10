-- guest_memory_mb: the linear memory the account's function instances may
-- hold at once, in MiB; NULL takes the server's (sluice serve
-- --guest-memory-mb-per-account). The runtime enforces it (see
-- runtime.FunctionConfig.AccountGuestMemory).
ALTER TABLE account_limits ADD COLUMN guest_memory_mb bigint CHECK (guest_memory_mb >= 0);
