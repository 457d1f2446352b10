-- Back to 003's sample_depths and 010's queue_stats.

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
    INSERT INTO queue_minutes AS qm (queue_id, minute, ready, inflight, delayed, dlq)
    SELECT s.queue_id, m, s.ready, s.inflight, s.delayed, s.dlq
      FROM queue_stats s
     ORDER BY s.queue_id
    ON CONFLICT (queue_id, minute) DO UPDATE
       SET ready = excluded.ready, inflight = excluded.inflight, delayed = excluded.delayed, dlq = excluded.dlq;
    GET DIAGNOSTICS n = ROW_COUNT;
    DELETE FROM queue_minutes WHERE minute <= m - interval '24 hours';
    DELETE FROM depth_samples WHERE minute <= m - interval '24 hours';
    RETURN n;
END
$$;

DROP VIEW queue_stats;
CREATE VIEW queue_stats AS
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
       coalesce(s.groups_blocked, 0) AS groups_blocked
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
                                  AND mg.size > 1) AS groups_blocked
          FROM messages m
          JOIN queues mq ON mq.id = m.queue_id
          LEFT JOIN message_groups mg ON mg.queue_id = m.queue_id AND mg.group_key = m.group_key
         GROUP BY m.queue_id, mq.account) s ON s.queue_id = q.id AND s.account = q.account
  LEFT JOIN (SELECT dl.queue_id, dq.account, count(*) AS dlq
               FROM dead_letters dl JOIN queues dq ON dq.id = dl.queue_id
              GROUP BY dl.queue_id, dq.account) d ON d.queue_id = q.id AND d.account = q.account
  LEFT JOIN (SELECT mg.queue_id, gq.account, count(*) AS groups
               FROM message_groups mg JOIN queues gq ON gq.id = mg.queue_id
              GROUP BY mg.queue_id, gq.account) g ON g.queue_id = q.id AND g.account = q.account;

ALTER TABLE queue_minutes DROP COLUMN bytes, DROP COLUMN dlq_bytes;
