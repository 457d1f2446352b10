-- Statements the Go client runs. Each block starts with "-- name: <key>";
-- {{schema}} is replaced by the quoted schema name. pgx prepares and caches
-- each statement per connection.

-- name: create_account
SELECT {{schema}}.create_account($1, $2)

-- name: ensure_account
INSERT INTO {{schema}}.accounts (number) VALUES ($1) ON CONFLICT DO NOTHING

-- name: create_queue
SELECT q.id, q.account, q.name, q.visibility_timeout_seconds, q.max_receive_count, q.delay_seconds,
       q.retention_seconds, q.max_message_bytes, q.dedup_window_seconds, q.created_at, q.updated_at, q.require_receipt,
       (SELECT d.name FROM {{schema}}.queues d WHERE d.id = q.dead_letter_queue_id), q.fifo
  FROM {{schema}}.account_create_queue($1, $2, $3) q

-- name: update_queue
SELECT q.id, q.account, q.name, q.visibility_timeout_seconds, q.max_receive_count, q.delay_seconds,
       q.retention_seconds, q.max_message_bytes, q.dedup_window_seconds, q.created_at, q.updated_at, q.require_receipt,
       (SELECT d.name FROM {{schema}}.queues d WHERE d.id = q.dead_letter_queue_id), q.fifo
  FROM {{schema}}.account_update_queue($1, $2, $3) q

-- name: set_require_receipt
SELECT {{schema}}.account_set_require_receipt($1, $2, $3)

-- name: get_queue
SELECT q.id, q.account, q.name, q.visibility_timeout_seconds, q.max_receive_count, q.delay_seconds,
       q.retention_seconds, q.max_message_bytes, q.dedup_window_seconds, q.created_at, q.updated_at, q.require_receipt,
       (SELECT d.name FROM {{schema}}.queues d WHERE d.id = q.dead_letter_queue_id), q.fifo
  FROM {{schema}}.queues q
 WHERE q.account = $1 AND q.name = $2

-- name: list_queues
SELECT q.id, q.account, q.name, q.visibility_timeout_seconds, q.max_receive_count, q.delay_seconds,
       q.retention_seconds, q.max_message_bytes, q.dedup_window_seconds, q.created_at, q.updated_at, q.require_receipt,
       (SELECT d.name FROM {{schema}}.queues d WHERE d.id = q.dead_letter_queue_id), q.fifo
  FROM {{schema}}.queues q
 WHERE q.account = $1
 ORDER BY q.name

-- name: delete_queue
SELECT {{schema}}.account_delete_queue($1, $2)

-- The hot path by queue id (migration 014; ids.go): on Citus each of
-- these runs on the worker holding the queue's shard. Sent on the pool
-- only, each a transaction of its own; in a caller's transaction (and in a
-- Batch) the account_* forms by name below are used.

-- name: send_id
SELECT {{schema}}.queue_send($1, $2, $3, $4, $5, $6, $7, $8, $9)

-- name: send_batch_id
SELECT s FROM {{schema}}.queue_send_batch($1, $2, $3, $4, 0, $5, $6, $7, $8, $9) s

-- name: receive_id
SELECT sequence, body, headers, receive_count, created_at, visible_at, receipt, group_key
  FROM {{schema}}.queue_receive($1, $2, $3, $4, $5)

-- name: receive_delete_id
SELECT sequence, body, headers, receive_count, created_at, visible_at, receipt, group_key
  FROM {{schema}}.queue_receive_delete($1, $2, $3, $4)

-- name: delete_id
-- $6: commit asynchronously (inside the function, so on the node that
-- writes).
SELECT {{schema}}.queue_delete($1, $2, $3, $4, $5, $6)

-- name: set_visibility_id
SELECT {{schema}}.queue_set_visibility($1, $2, $3, $4, $5, $6)

-- name: ack_id
-- $6: commit asynchronously, as in delete_id.
SELECT s FROM {{schema}}.queue_ack($1, $2, $3, $4, $5, $6) s

-- name: nack_id
SELECT s FROM {{schema}}.queue_nack($1, $2, $3, $4, $5, $6, $7) s

-- name: release_id
SELECT s FROM {{schema}}.queue_release($1, $2, $3, $4, $5) s

-- name: fail_id
SELECT s FROM {{schema}}.queue_fail($1, $2, $3, $4, $5, $6, $7) s

-- The same by account and queue name, for a caller's transaction.

-- name: send
SELECT {{schema}}.account_send($1, $2, $3, $4, $5, $6, $7, $8)

-- name: send_batch
SELECT s FROM {{schema}}.account_send_batch($1, $2, $3, 0, $4, $5, $6, $7, $8) s

-- name: async_commit
SELECT set_config('synchronous_commit', 'off', true)

-- name: ack
SELECT s FROM {{schema}}.account_ack($1, $2, $3, $4) s

-- name: nack
SELECT s FROM {{schema}}.account_nack($1, $2, $3, $4, $5, $6) s

-- name: fail
SELECT s FROM {{schema}}.account_fail($1, $2, $3, $4, $5, $6) s

-- name: peek
SELECT sequence, body, headers, receive_count, created_at, visible_at, receipt, group_key
  FROM {{schema}}.account_peek($1, $2, $3)

-- name: peek_after
-- A page of at most $4 messages holding at most $5 bytes of bodies and
-- headers (its first message whatever its size); cut says that the bytes
-- left some out. Only the
-- rows kept leave the database.
SELECT sequence, body, headers, receive_count, created_at, visible_at, receipt, group_key,
       found > count(*) OVER () AS cut
  FROM (SELECT p.*, count(*) OVER () AS found,
               row_number() OVER w AS n,
               sum(octet_length(p.body::text) + coalesce(octet_length(p.headers::text), 0)) OVER w AS bytes
          FROM {{schema}}.account_peek_after($1, $2, $3, $4) p
        WINDOW w AS (ORDER BY p.sequence)) page
 WHERE n = 1 OR bytes <= $5
 ORDER BY sequence

-- name: purge
SELECT {{schema}}.account_purge($1, $2)

-- name: receive_dlq
SELECT sequence, body, headers, receive_count, created_at, failed_at, reason, last_error, group_key
  FROM {{schema}}.account_receive_dlq($1, $2, $3)

-- name: receive_dlq_after
-- As peek_after, the dead letters' last errors counted too.
SELECT sequence, body, headers, receive_count, created_at, failed_at, reason, last_error, group_key,
       found > count(*) OVER () AS cut
  FROM (SELECT d.*, count(*) OVER () AS found,
               row_number() OVER w AS n,
               sum(octet_length(d.body::text) + coalesce(octet_length(d.headers::text), 0)
                   + coalesce(octet_length(d.last_error), 0)) OVER w AS bytes
          FROM {{schema}}.account_receive_dlq_after($1, $2, $3, $4) d
        WINDOW w AS (ORDER BY d.sequence)) page
 WHERE n = 1 OR bytes <= $5
 ORDER BY sequence

-- name: delete_dlq
SELECT {{schema}}.account_delete_dlq($1, $2, $3)

-- name: purge_dlq
SELECT {{schema}}.account_purge_dlq($1, $2)

-- name: redrive
SELECT {{schema}}.account_redrive($1, $2, $3)

-- name: redrive_sequences
SELECT {{schema}}.account_redrive_sequences($1, $2, $3)

-- name: stats
-- By queue_id: the filter reaches queue_stats' grouped counts (one queue's
-- rows, one shard on Citus) where a filter on the name would not.
SELECT ready, delayed, inflight, dlq, oldest_ready_age_seconds, total, grouped_waiting, groups, groups_inflight, groups_blocked,
       bytes, dlq_bytes
  FROM {{schema}}.queue_stats
 WHERE queue_id = (SELECT id FROM {{schema}}.queues WHERE account = $1 AND name = $2)

-- name: account_stats
SELECT account, queue, ready, delayed, inflight, dlq, oldest_ready_age_seconds, total, grouped_waiting, groups, groups_inflight, groups_blocked,
       bytes, dlq_bytes
  FROM {{schema}}.queue_stats
 WHERE account = $1
 ORDER BY queue

-- name: all_stats
SELECT account, queue, ready, delayed, inflight, dlq, oldest_ready_age_seconds, total, grouped_waiting, groups, groups_inflight, groups_blocked,
       bytes, dlq_bytes
  FROM {{schema}}.queue_stats
 ORDER BY account, queue

-- name: queue_id
SELECT {{schema}}.queue_id($1, $2)

-- name: minute_stats
-- One row per minute of the window, oldest first; no rows for an unknown
-- queue.
SELECT w.minute, coalesce(m.sends, 0), coalesce(m.acks, 0), coalesce(m.dlq_moves, 0),
       m.ready, m.inflight, m.delayed, m.dlq
  FROM {{schema}}.queues q
 CROSS JOIN generate_series({{schema}}.current_minute() - make_interval(mins => $3 - 1),
                            {{schema}}.current_minute(), interval '1 minute') AS w(minute)
  LEFT JOIN {{schema}}.queue_minutes m ON m.queue_id = q.id AND m.minute = w.minute
 WHERE q.account = $1 AND q.name = $2
 ORDER BY w.minute

-- name: add_minute_counts
-- Add a Client's counted sends and acks; rows are locked in key order.
INSERT INTO {{schema}}.queue_minutes AS m (queue_id, minute, sends, acks)
SELECT q.id, c.minute, c.sends, c.acks
  FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::bigint[], $5::bigint[])
       AS c(account, name, minute, sends, acks)
  JOIN {{schema}}.queues q ON q.account = c.account AND q.name = c.name
 ORDER BY q.id, c.minute
ON CONFLICT (queue_id, minute) DO UPDATE
   SET sends = m.sends + excluded.sends, acks = m.acks + excluded.acks

-- name: sample_depths
SELECT {{schema}}.sample_depths($1)

-- name: create_topic
SELECT {{schema}}.account_create_topic($1, $2)

-- name: delete_topic
SELECT {{schema}}.account_delete_topic($1, $2)

-- name: subscribe
SELECT {{schema}}.account_subscribe($1, $2, $3)

-- name: unsubscribe
SELECT {{schema}}.account_unsubscribe($1, $2, $3)

-- name: list_subscriptions
SELECT q.name
  FROM {{schema}}.topics t
  JOIN {{schema}}.subscriptions s ON s.topic_id = t.id
  JOIN {{schema}}.queues q ON q.id = s.queue_id
 WHERE t.account = $1 AND t.name = $2
 ORDER BY q.name

-- name: publish
SELECT {{schema}}.account_publish($1, $2, $3, $4)

-- name: subscribe_filter
SELECT {{schema}}.account_subscribe($1, $2, $3, $4, $5)

-- name: publish_batch
SELECT copies FROM {{schema}}.account_publish_batch($1, $2, $3::jsonb[], $4::jsonb[], 0, $5::integer[]) AS copies

-- name: list_topics
SELECT topic, created_at, queue, filter, source FROM {{schema}}.account_list_topics($1)

-- name: get_topic
SELECT topic, created_at, queue, filter, source FROM {{schema}}.account_list_topics($1) WHERE topic = $2

-- name: sweep
SELECT {{schema}}.sweep()

-- name: register_interest
INSERT INTO {{schema}}.wake_interest (queue_id, until)
SELECT q.id, now() + make_interval(secs => $3)
  FROM {{schema}}.queues q
  JOIN unnest($1::text[], $2::text[]) AS w(account, name) ON q.account = w.account AND q.name = w.name
ON CONFLICT (queue_id) DO UPDATE SET until = excluded.until

-- name: dead_tuples
SELECT coalesce(n_dead_tup, 0)
  FROM pg_stat_user_tables
 WHERE relid = to_regclass($1)

-- name: dead_tuples_citus
-- Citus only: the dead rows of the table on this node plus those of its
-- shards, read on the node holding each (run_command_on_shards gives no
-- row for a table that is not distributed).
SELECT coalesce((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = to_regclass($1)), 0)
     + coalesce((SELECT sum(s.result::bigint)
                   FROM run_command_on_shards(to_regclass($1),
                            $cmd$SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables WHERE relid = to_regclass('%s')$cmd$) s
                  WHERE s.success), 0)

-- name: statistics_age
-- The messages table ($1) as the planner's statistics last saw it and as it
-- is now: whether it was ever analyzed, the rows it had when last counted
-- (by ANALYZE or VACUUM), the rows it has now and the rows written since
-- its last ANALYZE (inserted, updated or deleted).
SELECT coalesce(s.last_analyze, s.last_autoanalyze) IS NOT NULL, greatest(c.reltuples, 0)::bigint,
       s.n_live_tup, s.n_mod_since_analyze
  FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
 WHERE s.relid = to_regclass($1)

-- name: statistics_age_citus
-- Citus only: the same, summed over the table's shards, read on the node
-- holding each; the table counts as analyzed once every shard was.
SELECT coalesce(bool_and(split_part(s.result, ',', 1)::boolean), false),
       coalesce(sum(split_part(s.result, ',', 2)::bigint), 0),
       coalesce(sum(split_part(s.result, ',', 3)::bigint), 0),
       coalesce(sum(split_part(s.result, ',', 4)::bigint), 0)
  FROM run_command_on_shards(to_regclass($1),
           $cmd$SELECT coalesce((SELECT concat_ws(',', coalesce(s.last_analyze, s.last_autoanalyze) IS NOT NULL, greatest(c.reltuples, 0)::bigint, s.n_live_tup, s.n_mod_since_analyze)
                                   FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
                                  WHERE s.relid = to_regclass('%s')), 'false,0,0,0')$cmd$) s
 WHERE s.success

-- name: get_queues
-- Many queues by (account, name) in one statement; missing ones yield no row.
SELECT q.id, q.account, q.name, q.visibility_timeout_seconds, q.max_receive_count, q.delay_seconds,
       q.retention_seconds, q.max_message_bytes, q.dedup_window_seconds, q.created_at, q.updated_at, q.require_receipt,
       (SELECT d.name FROM {{schema}}.queues d WHERE d.id = q.dead_letter_queue_id), q.fifo
  FROM unnest($1::text[], $2::text[]) AS r(account, name)
  JOIN {{schema}}.queues q ON q.account = r.account AND q.name = r.name

-- name: ack_exact
-- ack, failing (SQ006, which rolls back its transaction) unless every
-- message was deleted: its lease still current.
WITH s AS (SELECT s FROM {{schema}}.account_ack($1, $2, $3, $4) s)
SELECT CASE WHEN count(*) = cardinality($3::bigint[]) THEN count(*)
       ELSE ({{schema}}.raise_error('SQ006', format('ack messages in queue %s: %s of %s leases are no longer current',
             $2, cardinality($3::bigint[]) - count(*), cardinality($3::bigint[]))) IS NULL)::int END
  FROM s

-- name: nack_exact
WITH s AS (SELECT s FROM {{schema}}.account_nack($1, $2, $3, $4, $5, $6) s)
SELECT CASE WHEN count(*) = cardinality($3::bigint[]) THEN count(*)
       ELSE ({{schema}}.raise_error('SQ006', format('nack messages in queue %s: %s of %s leases are no longer current',
             $2, cardinality($3::bigint[]) - count(*), cardinality($3::bigint[]))) IS NULL)::int END
  FROM s

-- name: fail_exact
WITH s AS (SELECT s FROM {{schema}}.account_fail($1, $2, $3, $4, $5, $6) s)
SELECT CASE WHEN count(*) = cardinality($3::bigint[]) THEN count(*)
       ELSE ({{schema}}.raise_error('SQ006', format('fail messages in queue %s: %s of %s leases are no longer current',
             $2, cardinality($3::bigint[]) - count(*), cardinality($3::bigint[]))) IS NULL)::int END
  FROM s

-- name: set_queue_app
UPDATE {{schema}}.queues SET app = $3 WHERE account = $1 AND name = $2

-- name: queue_apps
SELECT name, app FROM {{schema}}.queues WHERE account = $1 ORDER BY name

-- name: send_batch_noted
-- send_batch, also appending {"queue": $2, "sequences": [...]} (in send
-- order) to the transaction-local setting sluice.sent (Batch.NoteSent).
WITH s AS MATERIALIZED (
    SELECT t.s, t.n FROM {{schema}}.account_send_batch($1, $2, $3, 0, $4, $5, $6, $7, $8) WITH ORDINALITY AS t(s, n)
), noted AS MATERIALIZED (
    SELECT set_config('sluice.sent', (coalesce(nullif(current_setting('sluice.sent', true), ''), '[]')::jsonb
        || jsonb_build_array(jsonb_build_object('queue', $2::text, 'sequences', (SELECT jsonb_agg(s.s ORDER BY s.n) FROM s))))::text, true)
)
SELECT s.s FROM s, noted ORDER BY s.n

-- name: publish_noted
-- publish, also appending {"topic": $2, "copies": N} to the
-- transaction-local setting sluice.sent (Batch.NoteSent).
WITH p AS MATERIALIZED (
    SELECT {{schema}}.account_publish($1, $2, $3, $4) AS copies
), noted AS MATERIALIZED (
    SELECT set_config('sluice.sent', (coalesce(nullif(current_setting('sluice.sent', true), ''), '[]')::jsonb
        || jsonb_build_array(jsonb_build_object('topic', $2::text, 'copies', (SELECT p.copies FROM p))))::text, true)
)
SELECT p.copies FROM p, noted

-- name: citus_installed
SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')

-- name: citus_other_nodes
-- Citus only: the active primary nodes other than this one (the listener
-- LISTENs on each, since a write running there NOTIFYs there).
SELECT nodename, nodeport
  FROM pg_dist_node
 WHERE isactive AND noderole = 'primary'
   AND groupid <> (SELECT groupid FROM pg_dist_local_group)
 ORDER BY nodename, nodeport

-- name: stored_bytes
-- The minute of the last depth sample (NULL before the first), the bytes
-- of account's messages and dead letters it recorded (migration 024), and
-- whether it is at most $2 seconds old by the database's clock. The
-- sample's minute is read first, as its own subquery, so that the
-- account's rows are found by key: its queues, then each queue's row of
-- that minute.
WITH s AS (SELECT max(minute) AS minute FROM {{schema}}.depth_samples)
SELECT (SELECT minute FROM s),
       (SELECT coalesce(sum(coalesce(m.bytes, 0) + coalesce(m.dlq_bytes, 0)), 0)::bigint
          FROM {{schema}}.queue_minutes m
          JOIN {{schema}}.queues q ON q.id = m.queue_id
         WHERE q.account = $1 AND m.minute = (SELECT minute FROM s)),
       coalesce((SELECT minute FROM s) > now() - make_interval(secs => $2), false)
