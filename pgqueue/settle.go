package pgqueue

import "context"

// SettleByID settles messages of account's queue with one statement of
// the caller's: the call of a SQL function keyed by the queue's id, which
// on Citus (distributed by that argument, co-located with messages) runs
// on the worker holding the queue's shard and commits there by itself.
// Package triggers settles a batch and writes its invocation records so,
// in one transaction (its settle_invocations).
//
// stmt is run on the Client's pool, as a statement of its own (inside a
// transaction block Citus would not delegate it). Its arguments are, in
// order: the queue's id, account and queue ($1-$3); acks as queue_ack
// takes them, sequences and receipts ($4, $5); nacks as queue_nack takes
// them, sequences, receipts, delays in whole seconds and errors ($6-$9);
// fails as queue_fail takes them, sequences, receipts, reasons and errors
// ($10-$13); whether to commit without waiting for the disk ($14: true
// unless the Client was configured with SynchronousAcks, as its own acks);
// then extra.
//
// The function must settle them through queue_ack, queue_nack and
// queue_fail, and fail whole with SQLSTATE SQ006 (ErrStaleReceipt) unless
// each settled every message it was given, so that what SettleByID reports
// done is exactly what was done. Each queue_* function first checks that
// the id still names the queue (SQ001, ErrQueueNotFound); when the id came
// from the Client's cache the call is then retried once with the id
// resolved again, as the Client's own calls are. Errors are converted as
// the Client's own.
func (c *Client) SettleByID(ctx context.Context, account, queue string, acks []Ack, nacks []Nack, fails []Failure,
	stmt string, extra ...any) error {
	ackSeqs, ackReceipts := ackArgs(acks)
	nackArg, err := nackArgs(account, queue, nacks)
	if err != nil {
		return err
	}
	nackArg, failArg := nackArg[2:], failArgs(account, queue, fails)[2:]
	op := "settle messages in queue " + quote(queue)
	err = c.byID(ctx, op, account, queue, func(id int64) error {
		args := make([]any, 0, 14+len(extra))
		args = append(args, id, account, queue, ackSeqs, ackReceipts)
		args = append(args, nackArg...)
		args = append(args, failArg...)
		args = append(args, !c.syncAcks)
		args = append(args, extra...)
		_, err := c.pool.Exec(ctx, stmt, args...)
		return convertError(op, err)
	})
	if err != nil {
		return err
	}
	c.counts.add(account, queue, 0, len(acks))
	return nil
}
