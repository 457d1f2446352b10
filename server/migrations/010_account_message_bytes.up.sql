-- message_bytes: what the account's messages and dead letters may take up
-- (bodies and headers, as stored); NULL takes the server's (sluice serve
-- --limit-message-bytes). The queue core enforces it on sends and
-- publishes (pgqueue.Options.StoredBytesLimit).
ALTER TABLE account_limits ADD COLUMN message_bytes bigint CHECK (message_bytes >= 0);
