package pgqueue_test

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/pgqueue"
)

// SettleByID hands the caller's statement the queue's id, the settlement's
// arrays in queue_ack's, queue_nack's and queue_fail's forms and the
// caller's own arguments: a function written like package triggers'
// settle_invocations (here: exact settling, then a check of the extra
// argument) acks, retries and fails by id in one call; a stale lease fails
// it whole with ErrStaleReceipt; a cached id of a queue deleted and
// created again is resolved again and the call retried.
func TestSettleByID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec(`CREATE FUNCTION settle_exact(p_queue_id bigint, p_account text, p_queue text,
	        p_ack_sequences bigint[], p_ack_receipts uuid[],
	        p_nack_sequences bigint[], p_nack_receipts uuid[], p_nack_delays integer[], p_nack_errors text[],
	        p_fail_sequences bigint[], p_fail_receipts uuid[], p_fail_reasons text[], p_fail_errors text[],
	        p_async_commit boolean, p_note text) RETURNS void
	    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
	    DECLARE n integer;
	    BEGIN
	        SELECT count(*) INTO n FROM queue_fail(p_queue_id, p_account, p_queue, p_fail_sequences, p_fail_receipts,
	                                               p_fail_reasons, p_fail_errors);
	        IF n <> cardinality(p_fail_sequences) THEN PERFORM raise_error('SQ006', 'fail: stale'); END IF;
	        SELECT count(*) INTO n FROM queue_ack(p_queue_id, p_account, p_queue, p_ack_sequences, p_ack_receipts, p_async_commit);
	        IF n <> cardinality(p_ack_sequences) THEN PERFORM raise_error('SQ006', 'ack: stale'); END IF;
	        SELECT count(*) INTO n FROM queue_nack(p_queue_id, p_account, p_queue, p_nack_sequences, p_nack_receipts,
	                                               p_nack_delays, p_nack_errors);
	        IF n <> cardinality(p_nack_sequences) THEN PERFORM raise_error('SQ006', 'nack: stale'); END IF;
	        IF p_note IS DISTINCT FROM 'mine' THEN RAISE EXCEPTION 'extra argument %', p_note; END IF;
	    END $$`)
	stmt := "SELECT " + pgxIdent(e.schema) + ".settle_exact($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
	e.queue("q", pgqueue.Settings{})
	for range 3 {
		e.send("q", `{}`)
	}
	ms := e.receive("q", pgqueue.ReceiveOptions{Max: 3}) // caches the id
	if len(ms) != 3 {
		t.Fatalf("received %d messages, want 3", len(ms))
	}
	count := func(query string) int64 {
		t.Helper()
		return e.one(query).(int64)
	}
	err := e.c.SettleByID(e.ctx, acct, "q",
		[]pgqueue.Ack{{Sequence: ms[0].Sequence, Receipt: ms[0].Receipt}},
		[]pgqueue.Nack{{Sequence: ms[1].Sequence, Receipt: ms[1].Receipt, Error: "again"}},
		[]pgqueue.Failure{{Sequence: ms[2].Sequence, Receipt: ms[2].Receipt, Reason: "permanent_failure"}},
		stmt, "mine")
	if err != nil {
		t.Fatalf("settle: %v", err)
	}
	if n := count(`SELECT count(*) FROM messages`); n != 1 {
		t.Errorf("%d messages left, want 1 (the retried one)", n)
	}
	if n := count(`SELECT count(*) FROM messages WHERE last_error = 'again' AND visible_at <= now()`); n != 1 {
		t.Errorf("the retried message is not ready with its error")
	}
	if n := count(`SELECT count(*) FROM dead_letters`); n != 1 {
		t.Errorf("%d dead letters, want 1", n)
	}

	// A stale lease: nothing happens.
	again := e.receive("q", pgqueue.ReceiveOptions{Max: 1})
	if len(again) != 1 {
		t.Fatalf("received %d messages, want 1", len(again))
	}
	err = e.c.SettleByID(e.ctx, acct, "q", []pgqueue.Ack{{Sequence: again[0].Sequence, Receipt: ms[1].Receipt}}, nil, nil, stmt, "mine")
	if !errors.Is(err, pgqueue.ErrStaleReceipt) {
		t.Fatalf("settle with a stale receipt: %v, want ErrStaleReceipt", err)
	}
	if n := count(`SELECT count(*) FROM messages`); n != 1 {
		t.Errorf("after the refused settlement %d messages, want 1", n)
	}

	// The queue deleted and created again: a new id, resolved again.
	if err := e.c.DeleteQueue(e.ctx, acct, "q"); err != nil {
		t.Fatal(err)
	}
	e.queue("q", pgqueue.Settings{})
	e.exec(`SELECT send('q', '{}')`)
	row := e.rows(`SELECT sequence, receipt::text FROM receive('q', 1)`)[0] // by name: the cache keeps the old id
	r, err := pgqueue.ParseReceipt(row[1].(string))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.c.SettleByID(e.ctx, acct, "q", []pgqueue.Ack{{Sequence: row[0].(int64), Receipt: r}}, nil, nil, stmt, "mine"); err != nil {
		t.Fatalf("settle after the queue was created again: %v", err)
	}
	if n := count(`SELECT count(*) FROM messages`); n != 0 {
		t.Errorf("%d messages left, want 0", n)
	}
	if err := e.c.SettleByID(e.ctx, acct, "nope", nil, nil, nil, stmt, "mine"); !errors.Is(err, pgqueue.ErrQueueNotFound) {
		t.Errorf("settle on a missing queue: %v, want ErrQueueNotFound", err)
	}
}
