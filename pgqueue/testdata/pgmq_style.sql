-- A baseline for the benchmarks only: a queue laid out the way the pgmq
-- extension lays out its queues (one table per queue, a bigint identity
-- msg_id, an index on vt, PL/pgSQL functions building their statements
-- with format() and EXECUTE), written from its documented design, not its
-- code. Applied to a scratch schema by baseline_bench_test.go.

CREATE TABLE q_bench (
    msg_id      bigint      PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
    read_ct     integer     NOT NULL DEFAULT 0,
    enqueued_at timestamptz NOT NULL DEFAULT now(),
    vt          timestamptz NOT NULL,
    message     jsonb
);
CREATE INDEX q_bench_vt_idx ON q_bench (vt ASC);

CREATE FUNCTION send_batch(queue_name text, msgs jsonb[], delay integer DEFAULT 0) RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY EXECUTE format(
        'INSERT INTO %I (vt, message) SELECT clock_timestamp() + make_interval(secs => $2), unnest($1) RETURNING msg_id',
        'q_' || queue_name) USING msgs, delay;
END
$$;

CREATE FUNCTION read(queue_name text, visibility integer, qty integer)
RETURNS TABLE (msg_id bigint, read_ct integer, enqueued_at timestamptz, vt timestamptz, message jsonb)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY EXECUTE format(
        'WITH cte AS (SELECT msg_id FROM %1$I WHERE vt <= clock_timestamp() ORDER BY msg_id ASC LIMIT $1 FOR UPDATE SKIP LOCKED)
         UPDATE %1$I m SET vt = clock_timestamp() + make_interval(secs => $2), read_ct = read_ct + 1
           FROM cte WHERE m.msg_id = cte.msg_id
         RETURNING m.msg_id, m.read_ct, m.enqueued_at, m.vt, m.message',
        'q_' || queue_name) USING qty, visibility;
END
$$;

CREATE FUNCTION delete(queue_name text, msg_ids bigint[]) RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY EXECUTE format('DELETE FROM %I WHERE msg_id = ANY($1) RETURNING msg_id', 'q_' || queue_name) USING msg_ids;
END
$$;
