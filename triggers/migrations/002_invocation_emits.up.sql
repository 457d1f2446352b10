-- The messages an invocation emitted (Function ABI v1.1), counted in the
-- record written in the same transaction as the batch's settlement.
ALTER TABLE invocations ADD COLUMN emitted integer NOT NULL DEFAULT 0;
