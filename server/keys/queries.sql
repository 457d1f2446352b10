-- Statements of package keys. {{schema}} is the quoted schema name.

-- name: create_key
INSERT INTO {{schema}}.access_keys (id, account, secret_hash, scopes, queues, description)
VALUES ($1, $2, $3, $4, $5, $6)
