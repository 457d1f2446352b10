-- A queue trigger's common settlement as one call keyed by the queue's id,
-- so that on Citus it runs on the worker holding the queue's shard
-- (issue #19; docs/scale-out.md, "The hot path on the workers").
--
-- The engine settles the batches it ran without emits (their acks,
-- retries and dead letters) together with their invocation records, in
-- one transaction: the records' counts are exactly what was settled
-- (issue #18). It did so with a pgx batch of statements by queue name,
-- which on Citus the coordinator runs, writing the records into its own
-- plain table. settle_invocations below is that transaction as one
-- function call: pgqueue/citus and triggers/citus.sql distribute it by
-- p_queue_id, co-located with messages, and the invocation log by the new
-- column queue_id, so the call is delegated to the queue's worker and
-- commits there alone. On plain Postgres it is an ordinary function.

-- queue_id is where a record is stored on Citus (its distribution
-- column): the queue's id for records written by settle_invocations, 0
-- for those written otherwise (settlements with emits, cron and invoke
-- records, DLQ triggers, settlements refused for a stale lease, and every
-- record from before this migration).
ALTER TABLE invocations ADD COLUMN queue_id bigint NOT NULL DEFAULT 0;

-- log_seq, the order records are written in, was drawn from the sequence
-- invocation_log_seq. On Citus a record written on a worker would draw it
-- from that worker's range of the sequence (2^48 x its group id upwards),
-- and a reader following the log by log_seq (metrics, `sluice logs
-- --follow`) would skip every later record of a lower range. So log_seq
-- is now the time the record is written: microseconds since 1970 from the
-- clock of the node that writes it, times 1024, plus the record's id
-- modulo 1024 to tell apart records written in the same microsecond (ids
-- are unique and those of records written together are close). It still
-- grows with write time, above every earlier value; readers re-read the
-- last seconds of the log (their settle window) anyway, which also covers
-- clocks of the nodes that differ by less than that. A record inserted
-- with a log_seq keeps it.
ALTER TABLE invocations ALTER COLUMN log_seq DROP DEFAULT;
DROP SEQUENCE invocation_log_seq;

CREATE FUNCTION invocation_log_position() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.log_seq := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1024 + NEW.id % 1024;
    RETURN NEW;
END $$;

CREATE TRIGGER invocation_log_position BEFORE INSERT ON invocations
    FOR EACH ROW WHEN (NEW.log_seq IS NULL) EXECUTE FUNCTION invocation_log_position();

-- Settle messages of queue p_queue_id (p_account's queue p_queue) and
-- record the invocations that ran them, in one transaction: the arguments
-- up to p_async_commit are pgqueue.Client.SettleByID's (the acks, retries
-- and failures as queue_ack, queue_nack and queue_fail take them), the
-- rest those of the records (one array element per record; message_ids as
-- array literals such as '{1,2}', since a bigint[][] would have to be
-- rectangular). Each settling is exact: unless it settled every message
-- given (a lease no longer current, a message gone), it raises SQ006 and
-- nothing of the call takes effect.
--
-- The failures go first, before any wake-up of this call. On Citus a
-- failure whose queue has a dead_letter_queue on another node writes that
-- node too: the worker running this call then commits with two-phase
-- commit, preparing the other node's part (the DLQ insert, which sent no
-- NOTIFY) and committing its own, NOTIFYs included (Postgres refuses to
-- PREPARE a transaction that ran NOTIFY). TestSettlementWithDeadLetterQueueOnOtherWorker
-- checks it on the cluster.
CREATE FUNCTION settle_invocations(
    p_queue_id bigint, p_account text, p_queue text,
    p_ack_sequences bigint[], p_ack_receipts uuid[],
    p_nack_sequences bigint[], p_nack_receipts uuid[], p_nack_delays integer[], p_nack_errors text[],
    p_fail_sequences bigint[], p_fail_receipts uuid[], p_fail_reasons text[], p_fail_errors text[],
    p_async_commit boolean,
    p_function text, p_version integer, p_trigger_id bigint, p_trigger_type text, p_source text, p_trigger text,
    p_ids bigint[], p_batch_sizes integer[], p_started_at timestamptz[], p_durations double precision[],
    p_outcomes text[], p_failure_kinds text[], p_errors text[], p_acked integer[], p_retried integer[],
    p_dead integer[], p_message_ids text[], p_stderrs text[], p_http_requests integer[],
    p_http_errors integer[], p_http_bytes_sent bigint[], p_http_bytes_received bigint[])
RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    n integer;
    want integer;
BEGIN
    IF p_async_commit THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    want := coalesce(cardinality(p_fail_sequences), 0);
    IF want > 0 THEN
        SELECT count(*) INTO n
          FROM queue_fail(p_queue_id, p_account, p_queue, p_fail_sequences, p_fail_receipts, p_fail_reasons, p_fail_errors);
        IF n <> want THEN
            PERFORM raise_error('SQ006', format('fail messages in queue %s: %s of %s leases are no longer current',
                                                p_queue, want - n, want));
        END IF;
    END IF;
    want := coalesce(cardinality(p_ack_sequences), 0);
    IF want > 0 THEN
        SELECT count(*) INTO n
          FROM queue_ack(p_queue_id, p_account, p_queue, p_ack_sequences, p_ack_receipts);
        IF n <> want THEN
            PERFORM raise_error('SQ006', format('ack messages in queue %s: %s of %s leases are no longer current',
                                                p_queue, want - n, want));
        END IF;
    END IF;
    want := coalesce(cardinality(p_nack_sequences), 0);
    IF want > 0 THEN
        SELECT count(*) INTO n
          FROM queue_nack(p_queue_id, p_account, p_queue, p_nack_sequences, p_nack_receipts, p_nack_delays, p_nack_errors);
        IF n <> want THEN
            PERFORM raise_error('SQ006', format('nack messages in queue %s: %s of %s leases are no longer current',
                                                p_queue, want - n, want));
        END IF;
    END IF;
    INSERT INTO invocations (id, queue_id, account, function, version, trigger_id, trigger_type, source,
        batch_size, started_at, duration_ms, outcome, failure_kind, error, acked, retried, dead, emitted,
        message_ids, stderr, http_requests, http_errors, http_bytes_sent, http_bytes_received, trigger)
    OVERRIDING SYSTEM VALUE
    SELECT r.id, p_queue_id, p_account, p_function, p_version, p_trigger_id, p_trigger_type, p_source,
           r.batch_size, r.started_at, r.duration_ms, r.outcome, r.failure_kind, r.error, r.acked, r.retried,
           r.dead, 0, r.message_ids::bigint[], r.stderr, r.http_requests, r.http_errors, r.http_bytes_sent,
           r.http_bytes_received, p_trigger
      FROM unnest(p_ids, p_batch_sizes, p_started_at, p_durations, p_outcomes, p_failure_kinds, p_errors,
                  p_acked, p_retried, p_dead, p_message_ids, p_stderrs, p_http_requests, p_http_errors,
                  p_http_bytes_sent, p_http_bytes_received)
           AS r(id, batch_size, started_at, duration_ms, outcome, failure_kind, error, acked, retried, dead,
                message_ids, stderr, http_requests, http_errors, http_bytes_sent, http_bytes_received)
     ORDER BY r.id;
END
$$;
