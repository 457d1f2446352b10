ALTER TABLE invocations
    DROP COLUMN http_requests,
    DROP COLUMN http_errors,
    DROP COLUMN http_bytes_sent,
    DROP COLUMN http_bytes_received;
