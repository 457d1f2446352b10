package pgqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// DeadLetter is a message in a queue's DLQ.
type DeadLetter struct {
	Sequence     int64
	Body         json.RawMessage
	Headers      json.RawMessage
	ReceiveCount int
	CreatedAt    time.Time
	FailedAt     time.Time
	// Reason is "max_receive_count" (the last allowed lease expired),
	// "permanent_failure" or the reason given to Fail.
	Reason string
	// LastError is the last error recorded for the message, if any.
	LastError string
	// Group is the message's group, "" for none; a redrive puts the
	// message back at the end of its group.
	Group string
}

// ReceiveDLQ returns up to max dead letters of a queue, oldest failure
// first. It does not hide them: settle them with DeleteDLQ or Redrive.
func (c *Client) ReceiveDLQ(ctx context.Context, account, queue string, max int) ([]DeadLetter, error) {
	return c.receiveDLQ(ctx, queue, "receive_dlq", nil, account, queue, max)
}

// ReceiveDLQAfter returns up to max (1 to 1000) dead letters of a queue
// whose sequence is above after, in sequence order, holding at most
// MaxPageBytes (or the first alone, when larger): page through a DLQ by passing the last
// sequence of one page as after for the next, for as long as more is set
// (as PeekAfter).
func (c *Client) ReceiveDLQAfter(ctx context.Context, account, queue string, after int64, max int) (ds []DeadLetter, more bool, err error) {
	var cut bool
	ds, err = c.receiveDLQ(ctx, queue, "receive_dlq_after", []any{&cut}, account, queue, after, max, MaxPageBytes)
	return ds, cut || len(ds) == max, err
}

// receiveDLQ reads the dead letters query returns; extra takes the
// columns past a dead letter's.
func (c *Client) receiveDLQ(ctx context.Context, queue, query string, extra []any, args ...any) ([]DeadLetter, error) {
	rows, err := c.pool.Query(ctx, c.q.get(query), args...)
	if err != nil {
		return nil, convertError("receive dlq of queue "+quote(queue), err)
	}
	defer rows.Close()
	var out []DeadLetter
	var d DeadLetter
	var count int32
	var lastErr, group *string
	// As in scanMessages: the JSON as it is, not through encoding/json.
	dest := append([]any{&d.Sequence, (*[]byte)(&d.Body), (*[]byte)(&d.Headers), &count, &d.CreatedAt, &d.FailedAt, &d.Reason, &lastErr, &group}, extra...)
	for rows.Next() {
		d, lastErr, group = DeadLetter{}, nil, nil
		if err := rows.Scan(dest...); err != nil {
			return nil, convertError("receive dlq of queue "+quote(queue), err)
		}
		d.ReceiveCount = int(count)
		if lastErr != nil {
			d.LastError = *lastErr
		}
		if group != nil {
			d.Group = *group
		}
		out = append(out, d)
	}
	return out, convertError("receive dlq of queue "+quote(queue), rows.Err())
}

// DeleteDLQ deletes one dead letter, or fails with ErrMessageNotFound.
func (c *Client) DeleteDLQ(ctx context.Context, account, queue string, sequence int64) error {
	var ok bool
	if err := c.pool.QueryRow(ctx, c.q.get("delete_dlq"), account, queue, sequence).Scan(&ok); err != nil {
		return convertError(fmt.Sprintf("delete dead letter %d of queue %s", sequence, quote(queue)), err)
	}
	if !ok {
		return newError(ErrMessageNotFound, "dead letter %d not found in queue %s", sequence, quote(queue))
	}
	return nil
}

// PurgeDLQ deletes every dead letter of a queue and returns how many.
func (c *Client) PurgeDLQ(ctx context.Context, account, queue string) (int64, error) {
	var n int64
	err := c.pool.QueryRow(ctx, c.q.get("purge_dlq"), account, queue).Scan(&n)
	return n, convertError("purge dlq of queue "+quote(queue), err)
}

// Redrive moves up to max dead letters (0 = all), oldest failure first,
// back into their queue, ready now with their receive count reset. It
// returns how many moved.
func (c *Client) Redrive(ctx context.Context, account, queue string, max int) (int64, error) {
	if max < 0 {
		return 0, newError(ErrInvalidArgument, "invalid redrive max %d: use 0 (all) or more", max)
	}
	var limit *int
	if max > 0 {
		limit = &max
	}
	var n int64
	err := c.pool.QueryRow(ctx, c.q.get("redrive"), account, queue, limit).Scan(&n)
	return n, convertError("redrive dlq of queue "+quote(queue), err)
}

// RedriveSequences moves the dead letters with the given sequences (1 to
// 1000) back into their queue, ready now with their receive count reset.
// Sequences not in the DLQ are skipped; it returns how many moved.
func (c *Client) RedriveSequences(ctx context.Context, account, queue string, sequences []int64) (int64, error) {
	var n int64
	err := c.pool.QueryRow(ctx, c.q.get("redrive_sequences"), account, queue, sequences).Scan(&n)
	return n, convertError("redrive dead letters of queue "+quote(queue), err)
}
