ALTER TABLE invocations DROP COLUMN emitted;
