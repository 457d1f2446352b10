-- Invoke calls running at once per account become slots of their own
-- (server/invoke.go, maxAccountInvokes): one account's invokes no longer
-- hold every one of a process's maxInvokes.
ALTER TABLE account_slots DROP CONSTRAINT account_slots_kind_check,
    ADD CONSTRAINT account_slots_kind_check CHECK (kind IN ('deploy', 'log_stream', 'invoke'));
