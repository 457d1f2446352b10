DROP VIEW kv;
DROP TABLE kv_entries;
