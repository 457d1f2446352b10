-- Per-message options on every surface: a batch send whose entries each
-- carry their own headers, delay, expiration and dedup key, and a receive
-- that deletes what it returns in the same statement (at most once).

-- An optional integer field of a send entry: NULL when absent or null,
-- else an integer in [p_min, p_max] (SQ005 naming the entry and range).
CREATE FUNCTION entry_int(p_entry jsonb, p_field text, p_index integer, p_min integer, p_max integer)
RETURNS integer
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    v jsonb := p_entry -> p_field;
BEGIN
    IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v) <> 'number' OR v::numeric <> trunc(v::numeric)
       OR v::numeric < p_min OR v::numeric > p_max THEN
        PERFORM raise_error('SQ005', format('invalid entries[%s].%s %s: use an integer from %s to %s',
                                            p_index, p_field, left(v::text, 40), p_min, p_max));
    END IF;
    RETURN v::integer;
END
$$;

-- Send a batch of entries, each a JSON object {"body": any JSON value but
-- null, "headers": {"k": "v"}, "delay_seconds": 0-43200,
-- "expires_in_seconds": 1-1209600, "dedup_key": "1-128 characters"} (all
-- but body optional). 1 to 1000 entries; all or none are stored; returns
-- the sequences in entry order (a repeated dedup key returns the first
-- message's sequence).
CREATE FUNCTION account_send_entries(p_account text, p_queue text, p_entries jsonb) RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    n integer;
    e jsonb;
    i integer := 0;
    k text;
    h jsonb;
    bodies jsonb[] := '{}';
    headers jsonb[] := '{}';
    delays integer[] := '{}';
    expires integer[] := '{}';
    keys text[] := '{}';
BEGIN
    PERFORM queue_id(p_account, p_queue);
    IF p_entries IS NULL OR jsonb_typeof(p_entries) <> 'array' THEN
        PERFORM raise_error('SQ005', 'invalid entries: use a JSON array of 1 to 1000 objects like {"body": {...}}');
    END IF;
    n := jsonb_array_length(p_entries);
    IF n < 1 OR n > 1000 THEN
        PERFORM out_of_range('number of entries', n, 1, 1000);
    END IF;
    FOR e IN SELECT value FROM jsonb_array_elements(p_entries) LOOP
        IF jsonb_typeof(e) <> 'object' THEN
            PERFORM raise_error('SQ005', format('invalid entries[%s]: use an object like {"body": {...}}', i));
        END IF;
        FOR k IN SELECT jsonb_object_keys(e) LOOP
            IF k NOT IN ('body', 'headers', 'delay_seconds', 'expires_in_seconds', 'dedup_key') THEN
                PERFORM raise_error('SQ005', format('unknown field %s in entries[%s]: use body, headers, delay_seconds, expires_in_seconds, dedup_key',
                                                    to_json(k)::text, i));
            END IF;
        END LOOP;
        IF e -> 'body' IS NULL OR jsonb_typeof(e -> 'body') = 'null' THEN
            PERFORM raise_error('SQ005', format('entries[%s] has no body: give "body", any JSON value but null', i));
        END IF;
        h := e -> 'headers';
        IF h IS NOT NULL AND jsonb_typeof(h) = 'null' THEN
            h := NULL;
        END IF;
        IF h IS NOT NULL AND (jsonb_typeof(h) <> 'object'
                              OR EXISTS (SELECT 1 FROM jsonb_each(h) x WHERE jsonb_typeof(x.value) <> 'string')) THEN
            PERFORM raise_error('SQ005', format('invalid entries[%s].headers: use a JSON object of string values like {"k": "v"}', i));
        END IF;
        IF e ? 'dedup_key' AND jsonb_typeof(e -> 'dedup_key') NOT IN ('string', 'null') THEN
            PERFORM raise_error('SQ005', format('invalid entries[%s].dedup_key: use a string of 1 to 128 characters', i));
        END IF;
        IF length(e ->> 'dedup_key') NOT BETWEEN 1 AND 128 THEN
            PERFORM raise_error('SQ005', format('invalid entries[%s].dedup_key: use a string of 1 to 128 characters, got %s',
                                                i, length(e ->> 'dedup_key')));
        END IF;
        bodies := array_append(bodies, e -> 'body');
        headers := array_append(headers, h);
        delays := array_append(delays, entry_int(e, 'delay_seconds', i, 0, 43200));
        expires := array_append(expires, entry_int(e, 'expires_in_seconds', i, 1, 1209600));
        keys := array_append(keys, e ->> 'dedup_key');
        i := i + 1;
    END LOOP;
    RETURN QUERY SELECT s FROM account_send_batch(p_account, p_queue, bodies, 0, headers, delays, expires, keys) s;
END
$$;

-- Receive and delete in one statement: claims up to p_max_messages ready
-- messages like account_receive and deletes them in the same transaction,
-- so none is ever returned twice (at most once). The rows carry the
-- receive_count of this delivery, visible_at = now() and no receipt.
CREATE FUNCTION account_receive_delete(p_account text, p_queue text, p_max_messages integer DEFAULT 1)
RETURNS SETOF received_message
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    q queues;
BEGIN
    SELECT * INTO q FROM queues WHERE account = p_account AND name = p_queue;
    IF NOT FOUND THEN PERFORM queue_not_found(p_account, p_queue); END IF;
    IF p_max_messages IS NULL OR p_max_messages < 1 OR p_max_messages > 1000 THEN
        PERFORM out_of_range('max_messages', p_max_messages, 1, 1000);
    END IF;
    -- The same claim as account_receive (see there for the ARRAY form).
    RETURN QUERY
    WITH gone AS (
        DELETE FROM messages m
         WHERE m.queue_id = q.id
           AND m.sequence = ANY (ARRAY(
               SELECT c.sequence
                 FROM messages c
                WHERE c.queue_id = q.id
                  AND c.visible_at <= now()
                  AND c.receive_count < q.max_receive_count
                  AND (c.expires_at IS NULL OR c.expires_at > now())
                ORDER BY c.visible_at, c.sequence
                LIMIT p_max_messages
                  FOR UPDATE SKIP LOCKED))
        RETURNING m.sequence, m.body, m.headers, m.receive_count + 1 AS receive_count, m.created_at
    )
    SELECT g.sequence, g.body, g.headers, g.receive_count, g.created_at, now(), NULL::uuid
      FROM gone g
     ORDER BY g.sequence;
END
$$;

-- The SQL API on the default account.

CREATE FUNCTION send_entries(queue text, entries jsonb) RETURNS SETOF bigint
LANGUAGE sql
BEGIN ATOMIC
    SELECT account_send_entries('000000000001', send_entries.queue, send_entries.entries);
END;

CREATE FUNCTION receive_delete(queue text, max_messages integer DEFAULT 1) RETURNS SETOF received_message
LANGUAGE sql
BEGIN ATOMIC
    SELECT * FROM account_receive_delete('000000000001', receive_delete.queue, receive_delete.max_messages);
END;
