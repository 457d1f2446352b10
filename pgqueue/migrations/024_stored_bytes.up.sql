-- The bytes an account's messages take up, sampled with the queue depths
-- (SECURITY.md: an account's stored message bytes are bounded).
--
-- queue_stats gets two columns: bytes, the size of the queue's messages'
-- bodies and headers as stored (pg_column_size: compressed where Postgres
-- compressed them, read from the row without fetching a TOASTed value),
-- and dlq_bytes, the same of its dead letters. The rest of the view is
-- 010's. A query that does not name the new columns does not compute
-- them: the planner drops unused aggregates of a subquery.
--
-- sample_depths records both in queue_minutes once a minute, in the scan
-- it made already, so that an account's stored bytes are known without
-- a counter row that every send and ack would update (which would
-- serialize them, as 003 says of sends). pgqueue.Client.StoredBytes sums
-- the account's queues in the last sample; Options.StoredBytesLimit
-- refuses sends and publishes of an account over its limit.

ALTER TABLE queue_minutes ADD COLUMN bytes bigint, ADD COLUMN dlq_bytes bigint;

CREATE OR REPLACE VIEW queue_stats AS
SELECT q.account,
       q.name AS queue,
       coalesce(s.ready, 0) AS ready,
       coalesce(s.delayed, 0) AS delayed,
       coalesce(s.inflight, 0) AS inflight,
       coalesce(d.dlq, 0) AS dlq,
       coalesce(s.oldest_ready_age_seconds, 0)::double precision AS oldest_ready_age_seconds,
       coalesce(s.total, 0) AS total,
       q.id AS queue_id,
       q.max_receive_count,
       q.visibility_timeout_seconds,
       coalesce(s.grouped_waiting, 0) AS grouped_waiting,
       coalesce(g.groups, 0) AS groups,
       coalesce(s.groups_inflight, 0) AS groups_inflight,
       coalesce(s.groups_blocked, 0) AS groups_blocked,
       coalesce(s.bytes, 0) AS bytes,
       coalesce(d.dlq_bytes, 0) AS dlq_bytes
  FROM queues q
  LEFT JOIN (
        SELECT m.queue_id, mq.account,
               count(*) FILTER (WHERE m.visible_at <= now() AND m.receive_count < mq.max_receive_count
                                  AND (m.expires_at IS NULL OR m.expires_at > now())) AS ready,
               count(*) FILTER (WHERE m.visible_at > now() AND m.visible_at < 'infinity' AND m.receive_count = 0) AS delayed,
               count(*) FILTER (WHERE m.visible_at > now() AND m.receive_count > 0) AS inflight,
               extract(epoch FROM now() - min(m.created_at) FILTER (
                   WHERE m.visible_at <= now() AND m.receive_count < mq.max_receive_count
                     AND (m.expires_at IS NULL OR m.expires_at > now())))::double precision AS oldest_ready_age_seconds,
               count(*) AS total,
               count(*) FILTER (WHERE m.visible_at = 'infinity') AS grouped_waiting,
               count(*) FILTER (WHERE m.group_key IS NOT NULL AND m.visible_at > now() AND m.visible_at < 'infinity'
                                  AND m.receive_count > 0) AS groups_inflight,
               -- message_groups has one row per (queue_id, group_key), so the
               -- join adds no rows.
               count(*) FILTER (WHERE m.group_key IS NOT NULL AND m.visible_at < 'infinity'
                                  AND (m.receive_count > 1 OR (m.receive_count > 0 AND m.visible_at <= now())
                                       OR m.last_error IS NOT NULL)
                                  AND mg.size > 1) AS groups_blocked,
               sum(pg_column_size(m.body) + coalesce(pg_column_size(m.headers), 0))::bigint AS bytes
          FROM messages m
          JOIN queues mq ON mq.id = m.queue_id
          LEFT JOIN message_groups mg ON mg.queue_id = m.queue_id AND mg.group_key = m.group_key
         GROUP BY m.queue_id, mq.account) s ON s.queue_id = q.id AND s.account = q.account
  LEFT JOIN (SELECT dl.queue_id, dq.account, count(*) AS dlq,
                    sum(pg_column_size(dl.body) + coalesce(pg_column_size(dl.headers), 0))::bigint AS dlq_bytes
               FROM dead_letters dl JOIN queues dq ON dq.id = dl.queue_id
              GROUP BY dl.queue_id, dq.account) d ON d.queue_id = q.id AND d.account = q.account
  LEFT JOIN (SELECT mg.queue_id, gq.account, count(*) AS groups
               FROM message_groups mg JOIN queues gq ON gq.id = mg.queue_id
              GROUP BY mg.queue_id, gq.account) g ON g.queue_id = q.id AND g.account = q.account;

-- 003's sample_depths, recording bytes and dlq_bytes as well.
CREATE OR REPLACE FUNCTION sample_depths(p_force boolean DEFAULT false) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    m timestamptz := current_minute();
    n bigint;
BEGIN
    INSERT INTO depth_samples (minute) VALUES (m) ON CONFLICT DO NOTHING;
    IF NOT FOUND AND NOT p_force THEN
        RETURN 0;
    END IF;
    INSERT INTO queue_minutes AS qm (queue_id, minute, ready, inflight, delayed, dlq, bytes, dlq_bytes)
    SELECT s.queue_id, m, s.ready, s.inflight, s.delayed, s.dlq, s.bytes, s.dlq_bytes
      FROM queue_stats s
     ORDER BY s.queue_id
    ON CONFLICT (queue_id, minute) DO UPDATE
       SET ready = excluded.ready, inflight = excluded.inflight, delayed = excluded.delayed, dlq = excluded.dlq,
           bytes = excluded.bytes, dlq_bytes = excluded.dlq_bytes;
    GET DIAGNOSTICS n = ROW_COUNT;
    DELETE FROM queue_minutes WHERE minute <= m - interval '24 hours';
    DELETE FROM depth_samples WHERE minute <= m - interval '24 hours';
    RETURN n;
END
$$;
