-- send_batch of the default account in one lookup and one INSERT
-- (issue #18; BENCHMARKS.md, "Migration 018").
--
-- Until now send_batch read the queue's id and handed the batch to
-- queue_send_batch, which read the queue again, made its checks one IF at
-- a time, inserted in the VALUES statements Citus routes (015), and then
-- ran a third query for the wake-up. A call from SQL is its own
-- transaction, and much of that work is paid per transaction as well as
-- per call: each plpgsql frame and each statement of it sets up again
-- (executor start, locks, its expressions). Against a plain 10-row
-- INSERT from unnest (scripts/bench-sql: pgbench, 8 clients, durable
-- commits), a batch of 10 ran at 0.71-0.72x before and 0.77-0.78x after
-- this migration (medians of 18 and of 10 alternated rounds).
--
-- send_batch now does the common case itself: one query reads the queue,
-- computes the batch's visibility, looks for wake-up interest and decides
-- whether the batch is the common case (bodies only, a plain queue, a
-- delay and a size within bounds, every body within max_message_bytes),
-- then one INSERT from unnest, which inserts and returns the rows in the
-- array's order as 014's did (TestSendBatchSizes checks the sequences'
-- order). The bounds are 015's, as one test: a batch that fails any of
-- them, or a missing queue, goes to queue_send_batch as before, which
-- raises the same errors in the same order (or, for an empty batch,
-- returns nothing). The size test is 015's: the text of the bodies as one
-- JSON array within the limit.
--
-- The wake-up interest is read before the INSERT instead of after it. A
-- wake-up is a hint (a long poll also polls), and interest is registered
-- for a minute and renewed while a listener waits, so reading it a
-- statement earlier changes nothing a listener can see.
--
-- On Citus (its setting citus.version exists wherever the extension is
-- loaded) every batch takes queue_send_batch's routed VALUES inserts as
-- before, after 015's lookup: an INSERT ... SELECT from unnest into the
-- distributed table would collect the rows on the coordinator first
-- (015), and Citus refuses the lookup's correlated subquery on
-- wake_interest beside the reference table queues.

CREATE OR REPLACE FUNCTION send_batch(queue text, bodies jsonb[], delay_seconds integer DEFAULT 0,
                                      group_key text DEFAULT NULL) RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    qid bigint;
    visible timestamptz;
    wake boolean;
    common boolean;
BEGIN
    IF current_setting('citus.version', true) IS NULL THEN
        SELECT q.id,
               now() + make_interval(secs => greatest(coalesce(send_batch.delay_seconds, 0), q.delay_seconds)),
               EXISTS (SELECT 1 FROM wake_interest w WHERE w.queue_id = q.id AND w.until > now()),
               NOT q.fifo AND send_batch.group_key IS NULL
               AND coalesce(send_batch.delay_seconds, 0) BETWEEN 0 AND 43200
               AND cardinality(bodies) BETWEEN 1 AND 1000
               AND array_ndims(bodies) = 1 AND array_lower(bodies, 1) = 1
               AND array_position(bodies, NULL) IS NULL
               AND octet_length(to_jsonb(bodies)::text) <= q.max_message_bytes
          INTO qid, visible, wake, common
          FROM queues q WHERE q.account = '000000000001' AND q.name = send_batch.queue;
        IF common THEN
            RETURN QUERY
            INSERT INTO messages (queue_id, visible_at, body)
            SELECT qid, visible, b FROM unnest(bodies) b
            RETURNING sequence;
            IF wake AND visible <= now() THEN
                PERFORM pg_notify(current_schema() || '_wake', '000000000001/' || queue);
            END IF;
            RETURN;
        END IF;
    ELSE
        SELECT q.id INTO qid FROM queues q WHERE q.account = '000000000001' AND q.name = send_batch.queue;
    END IF;
    RETURN QUERY SELECT s FROM queue_send_batch(qid, '000000000001', queue, bodies, delay_seconds,
                                                NULL, NULL, NULL, NULL,
                                                CASE WHEN group_key IS NULL THEN NULL
                                                     ELSE array_fill(group_key, ARRAY[cardinality(bodies)]) END) s;
END
$$;
