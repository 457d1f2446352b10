ALTER TABLE invocations DROP COLUMN emitted_messages;
