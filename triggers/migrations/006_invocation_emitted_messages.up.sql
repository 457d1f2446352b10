-- The messages an invocation emitted (Function ABI v1.1), written in the
-- transaction that settled it: one element per emit, in the function's
-- output order, {"queue": Q, "sequence": N, "for": ID} for a send (N is the
-- message's sequence in Q; a deduplicated send's is the first send's) or
-- {"topic": T, "copies": N, "for": ID} for a publish; "for" only when the
-- emit named its message. NULL when it emitted nothing.
ALTER TABLE invocations ADD COLUMN emitted_messages jsonb;
