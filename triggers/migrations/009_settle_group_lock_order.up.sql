-- settle_invocations locks the groups of the messages it fails and acks
-- in group-key order, all before settling any (pgqueue's migration 019
-- gives the reason: a statement taking two groups' locks in one order and
-- another taking them in the other deadlock). Otherwise as 007.

CREATE OR REPLACE FUNCTION settle_invocations(
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
    -- The groups of the failures and acks together, in one order
    -- (pgqueue's migration 019): queue_fail and queue_ack each lock theirs
    -- in order, but one after the other the two sets would not be.
    IF coalesce(cardinality(p_fail_sequences), 0) + coalesce(cardinality(p_ack_sequences), 0) > 1
       AND EXISTS (SELECT 1 FROM message_groups g WHERE g.queue_id = p_queue_id) THEN
        PERFORM lock_groups_of(p_queue_id, coalesce(p_fail_sequences, '{}') || coalesce(p_ack_sequences, '{}'));
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

