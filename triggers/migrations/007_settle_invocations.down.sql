DROP FUNCTION settle_invocations(bigint, text, text, bigint[], uuid[], bigint[], uuid[], integer[], text[],
    bigint[], uuid[], text[], text[], boolean, text, integer, bigint, text, text, text, bigint[], integer[],
    timestamptz[], double precision[], text[], text[], text[], integer[], integer[], integer[], text[], text[],
    integer[], integer[], bigint[], bigint[]);
DROP TRIGGER invocation_log_position ON invocations;
DROP FUNCTION invocation_log_position();
-- log_seq from a sequence again, past every position written.
CREATE SEQUENCE invocation_log_seq;
SELECT setval('invocation_log_seq', coalesce(max(log_seq), 0) + 1, false) FROM invocations;
ALTER TABLE invocations ALTER COLUMN log_seq SET DEFAULT nextval('invocation_log_seq');
ALTER SEQUENCE invocation_log_seq OWNED BY invocations.log_seq;
ALTER TABLE invocations DROP COLUMN queue_id;
