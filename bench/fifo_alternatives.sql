DROP SCHEMA IF EXISTS fifoalt CASCADE;
CREATE SCHEMA fifoalt; SET search_path = fifoalt;
CREATE TABLE messages (queue_id bigint, sequence bigint, visible_at timestamptz, receive_count int DEFAULT 0, group_key text, body jsonb, PRIMARY KEY (queue_id, sequence));
CREATE INDEX messages_ready ON messages (queue_id, visible_at, sequence);
CREATE INDEX messages_group ON messages (queue_id, group_key, sequence) WHERE group_key IS NOT NULL;
-- queue 1 ("scan and skip" layout): a hot group of 100k sent first, then 100 groups x 100, all visible.
INSERT INTO messages SELECT 1, i, now() - interval '1 hour', 0, 'hot', '{}' FROM generate_series(1, 100000) i;
INSERT INTO messages SELECT 1, 100000 + i, now() - interval '1 hour', 0, 'g' || (i % 100), '{}' FROM generate_series(1, 10000) i;
-- the hot group's head is in flight
UPDATE messages SET visible_at = now() + interval '5 minutes', receive_count = 1 WHERE queue_id = 1 AND sequence = 1;
-- queue 2 (the parked layout of migration 008): the same messages, only heads visible.
INSERT INTO messages SELECT 2, sequence, CASE WHEN sequence = (SELECT min(sequence) FROM messages x WHERE x.queue_id = 1 AND x.group_key = m.group_key) THEN visible_at ELSE 'infinity' END, receive_count, group_key, body FROM messages m WHERE queue_id = 1;
VACUUM ANALYZE messages;
\echo scan-and-skip: receive 10 heads when a hot group leads the queue
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)
SELECT c.sequence FROM messages c
 WHERE c.queue_id = 1 AND c.visible_at <= now()
   AND (c.group_key IS NULL OR NOT EXISTS (SELECT 1 FROM messages e WHERE e.queue_id = c.queue_id AND e.group_key = c.group_key AND e.sequence < c.sequence))
 ORDER BY c.visible_at, c.sequence LIMIT 10 FOR UPDATE SKIP LOCKED;
\echo parked heads (008): the same receive
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)
SELECT c.sequence FROM messages c
 WHERE c.queue_id = 2 AND c.visible_at <= now()
 ORDER BY c.visible_at, c.sequence LIMIT 10 FOR UPDATE SKIP LOCKED;
DROP SCHEMA fifoalt CASCADE;
