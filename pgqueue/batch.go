package pgqueue

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
)

// Batch gathers statements of the Go API (and the caller's own) to run
// together: Run sends them in one round trip, and they run as one
// transaction — all of them take effect, or none does. The settling
// statements are exact: one whose lease is no longer current (or whose
// message is gone) fails the whole batch with ErrStaleReceipt, so what
// Run reports done is exactly what was done. A Batch is not safe for
// concurrent use and runs once.
type Batch struct {
	c      *Client
	b      pgx.Batch
	err    error // the first argument error; Run returns it
	counts []func()
	sends  bool // the batch sends or publishes: it commits synchronously
	noted  bool // sends and publishes note what they sent (NoteSent)
	// limitChecks are the sends and publishes that Run checks against
	// Options.StoredBytesLimit first (none without one).
	limitChecks []limitCheck
}

// limitCheck is a send or publish of a Batch, for its stored bytes check:
// to account, what ("send batch to queue", "publish to topic") to name.
type limitCheck struct{ account, what, name string }

// addLimitCheck notes a send or publish for Run's stored bytes check.
func (b *Batch) addLimitCheck(account, what, name string) {
	if b.c.storedLimit != nil {
		b.limitChecks = append(b.limitChecks, limitCheck{account, what, name})
	}
}

// SentSetting names the transaction-local setting (a JSON array) in which
// the sends and publishes of a Batch after NoteSent record what they sent:
// {"queue": Q, "sequences": [...]} per send (the sequences in message
// order; a deduplicated message's is the first send's), {"topic": T,
// "copies": N} per publish, in statement order. Read it in a later
// statement of the same batch with current_setting('sluice.sent', true);
// it is gone when the transaction ends.
const SentSetting = "sluice.sent"

// NoteSent makes the sends and publishes queued on b after it record what
// they sent in SentSetting, so that a statement queued after them (in the
// same transaction) can store it: package triggers records the messages
// an invocation emitted so.
func (b *Batch) NoteSent() { b.noted = true }

// NewBatch returns an empty Batch. A batch that only settles commits
// asynchronously, like Ack, unless the client was configured with
// SynchronousAcks: a database crash may lose the whole batch (the messages
// are redelivered), never a part of it. A batch that sends or publishes
// commits synchronously, as sends do: once a message it sent may have been
// received, the batch is durable.
func (c *Client) NewBatch() *Batch { return &Batch{c: c} }

// Len returns how many statements b holds.
func (b *Batch) Len() int { return b.b.Len() }

func (b *Batch) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Ack queues the deletion of every message in acks.
func (b *Batch) Ack(account, queue string, acks []Ack) {
	if len(acks) == 0 {
		return
	}
	seqs, receipts := ackArgs(acks)
	b.b.Queue(b.c.q.get("ack_exact"), account, queue, seqs, receipts)
	b.counts = append(b.counts, func() { b.c.counts.add(account, queue, 0, len(acks)) })
}

// Nack queues the retry of every message in nacks (see Client.Nack).
func (b *Batch) Nack(account, queue string, nacks []Nack) {
	if len(nacks) == 0 {
		return
	}
	args, err := nackArgs(account, queue, nacks)
	if err != nil {
		b.fail(err)
		return
	}
	b.b.Queue(b.c.q.get("nack_exact"), args...)
}

// Fail queues the move of every message in fails to the DLQ.
func (b *Batch) Fail(account, queue string, fails []Failure) {
	if len(fails) == 0 {
		return
	}
	b.b.Queue(b.c.q.get("fail_exact"), failArgs(account, queue, fails)...)
}

// DeleteDLQ queues the deletion of dead letters; deleted, when not nil,
// gets how many were there to delete.
func (b *Batch) DeleteDLQ(account, queue string, sequences []int64, deleted *int) {
	for _, s := range sequences {
		b.b.Queue(b.c.q.get("delete_dlq"), account, queue, s).QueryRow(func(row pgx.Row) error {
			var ok bool
			if err := row.Scan(&ok); err != nil {
				return convertError("delete dead letter in queue "+quote(queue), err)
			}
			if ok && deleted != nil {
				*deleted++
			}
			return nil
		})
	}
}

// Send queues a send of ms to queue (see SendBatch); a failure of it (the
// queue does not exist, a message is too large, the account is at its
// stored bytes limit ...) fails the batch with the error naming the queue.
func (b *Batch) Send(account, queue string, ms []NewMessage) {
	if len(ms) == 0 {
		return
	}
	args, err := sendBatchArgs(account, queue, ms)
	if err != nil {
		b.fail(err)
		return
	}
	b.sends = true
	b.addLimitCheck(account, "send batch to queue", queue)
	stmt := "send_batch"
	if b.noted {
		stmt = "send_batch_noted"
	}
	b.b.Queue(b.c.q.get(stmt), args...).Query(func(rows pgx.Rows) error {
		_, err := collectSequences(rows, len(ms))
		return convertError("send batch to queue "+quote(queue), err)
	})
	b.counts = append(b.counts, func() { b.c.counts.add(account, queue, len(ms), 0) })
}

// Publish queues a publish to topic (see Client.Publish); copies, when not
// nil, gets how many copies it made.
func (b *Batch) Publish(account, topic string, body, headers json.RawMessage, copies *int) {
	if len(body) == 0 {
		b.fail(newError(ErrInvalidArgument, "publish to topic %s: empty body: use a JSON value", quote(topic)))
		return
	}
	b.sends = true
	b.addLimitCheck(account, "publish to topic", topic)
	stmt := "publish"
	if b.noted {
		stmt = "publish_noted"
	}
	b.b.Queue(b.c.q.get(stmt), account, topic, string(body), rawOrNil(headers)).QueryRow(func(row pgx.Row) error {
		var n int32
		if err := row.Scan(&n); err != nil {
			return convertError("publish to topic "+quote(topic), err)
		}
		if copies != nil {
			*copies += int(n)
		}
		return nil
	})
}

// Queue adds a statement of the caller's (its result is discarded).
func (b *Batch) Queue(sql string, args ...any) { b.b.Queue(sql, args...) }

// Run sends the batch on db (a pool, connection or transaction) and
// reads its results. On an error nothing of it took effect (unless db is
// a transaction the caller goes on to commit).
func (b *Batch) Run(ctx context.Context, db interface {
	DB
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}) error {
	if b.err != nil {
		return b.err
	}
	checked := map[string]bool{}
	for _, l := range b.limitChecks {
		if checked[l.account] {
			continue
		}
		checked[l.account] = true
		if err := b.c.checkStoredBytes(ctx, db, l.account, l.what, l.name); err != nil {
			return err
		}
	}
	if !b.sends && !b.c.syncAcks && b.b.Len() > 0 {
		b.b.QueuedQueries = append([]*pgx.QueuedQuery{{SQL: b.c.q.get("async_commit")}}, b.b.QueuedQueries...)
	}
	if err := db.SendBatch(ctx, &b.b).Close(); err != nil {
		var qe *Error
		if errors.As(err, &qe) {
			return err
		}
		return convertError("run batch", err)
	}
	for _, f := range b.counts {
		f()
	}
	return nil
}
