-- What a function version may do beyond reporting failures (Function ABI
-- v1.1): the queues and topics it may emit to, the outbound hosts it may
-- call, the key-value stores it may open. Denied by default: '{}'.
ALTER TABLE function_versions
    ADD COLUMN capabilities jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(capabilities) = 'object');
