DROP INDEX invocations_trigger;
DROP INDEX invocations_log_seq;
ALTER TABLE invocations DROP COLUMN log_seq;
ALTER TABLE invocations DROP COLUMN trigger;
