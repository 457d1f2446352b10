DELETE FROM account_slots WHERE kind = 'invoke';
ALTER TABLE account_slots DROP CONSTRAINT account_slots_kind_check,
    ADD CONSTRAINT account_slots_kind_check CHECK (kind IN ('deploy', 'log_stream'));
