-- topics: how many topics the account may create through the API; NULL
-- takes the server's default (Config.Limits.Topics).
ALTER TABLE account_limits ADD COLUMN topics integer CHECK (topics >= 0);
