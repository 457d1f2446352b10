DROP FUNCTION kv_within_quota(text, text, bytea, bigint, bigint, bigint);
DROP TRIGGER kv_count ON kv_entries;
DROP FUNCTION kv_count();
DROP TABLE kv_usage;
