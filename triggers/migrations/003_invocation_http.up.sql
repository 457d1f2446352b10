-- What an invocation did through the outbound HTTP host import (Function
-- ABI v1.1): requests that reached the network, calls that failed or were
-- refused, and the bytes of request and response bodies.
ALTER TABLE invocations
    ADD COLUMN http_requests       integer NOT NULL DEFAULT 0,
    ADD COLUMN http_errors         integer NOT NULL DEFAULT 0,
    ADD COLUMN http_bytes_sent     bigint  NOT NULL DEFAULT 0,
    ADD COLUMN http_bytes_received bigint  NOT NULL DEFAULT 0;
