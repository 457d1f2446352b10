DROP TRIGGER invocation_trigger_name ON invocations;
DROP FUNCTION invocation_trigger_name();
DROP INDEX invocations_trigger;
DROP INDEX invocations_log_seq;
ALTER TABLE invocations DROP COLUMN log_seq;
ALTER TABLE invocations DROP COLUMN trigger;
