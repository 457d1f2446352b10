package pgqueue

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// NewMessage is a message to send.
type NewMessage struct {
	// Body is the JSON body (required).
	Body json.RawMessage
	// Headers is an optional JSON object.
	Headers json.RawMessage
	// Delay keeps the message invisible for this long (0 to 12h, rounded
	// up to whole seconds; the queue's own Delay is the minimum).
	Delay time.Duration
	// ExpiresIn, when non-zero, is the message's time to live: it is never
	// delivered after it and the sweeper removes it (1s to 14 days).
	ExpiresIn time.Duration
	// DedupKey, when set, makes a repeat send with the same key within the
	// queue's dedup window return the first message's sequence and store
	// nothing (1-128 characters).
	DedupKey string
	// Group, when set, puts the message into an ordered group (1-128
	// characters): within a group messages are delivered in sequence
	// order, one at a time; the next is receivable only once the one
	// before is acked, failed or dead-lettered. Required on a Fifo queue.
	Group string
}

// Message is a received or peeked message.
type Message struct {
	Sequence     int64
	Body         json.RawMessage
	Headers      json.RawMessage
	ReceiveCount int
	CreatedAt    time.Time
	// VisibleAt is when the lease ends (received) or ended (peeked).
	VisibleAt time.Time
	// Receipt is the lease token; zero for peeked messages.
	Receipt Receipt
	// Group is the message's group key, "" for none.
	Group string
}

// Receipt is the token of one lease of a message. Settling a message with a
// receipt that is not its latest fails with ErrStaleReceipt; the zero
// Receipt means "no fencing".
type Receipt [16]byte

// IsZero reports whether r is the zero (absent) receipt.
func (r Receipt) IsZero() bool { return r == Receipt{} }

// String formats r as a UUID.
func (r Receipt) String() string {
	var buf [36]byte
	hex.Encode(buf[0:8], r[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], r[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], r[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], r[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:], r[10:])
	return string(buf[:])
}

// ParseReceipt parses a receipt in UUID form.
func ParseReceipt(s string) (Receipt, error) {
	var u pgtype.UUID
	if err := u.Scan(s); err != nil {
		return Receipt{}, newError(ErrInvalidArgument, "invalid receipt %q: use a UUID like 3da9b9b9-7e3e-4b4c-9deb-1b9c1a6897ce", s)
	}
	return Receipt(u.Bytes), nil
}

func (r Receipt) uuid() pgtype.UUID { return pgtype.UUID{Bytes: r, Valid: !r.IsZero()} }

// ReceiveOptions tune a Receive.
type ReceiveOptions struct {
	// Max is the most messages to return (1 to 1000; 0 means 1).
	Max int
	// VisibilityTimeout is the lease (0 means the queue's default; at most
	// 12h, rounded up to whole seconds).
	VisibilityTimeout time.Duration
	// Wait, when positive, long-polls: Receive returns as soon as at least
	// one message is available, or empty after Wait (at most MaxWait).
	Wait time.Duration
	// Delete deletes the messages in the statement that claims them (at
	// most once: a message returned is already gone, never returned
	// again). The messages come back without a Receipt, VisibleAt is the
	// time of the receive, and VisibilityTimeout is not used.
	Delete bool
	// Claim, when set, runs each claim the receive makes (one, or one
	// each time a long poll looks): it calls claim at most once and
	// returns what claim returned, or nothing without calling it to skip
	// this look (a long poll waits and looks again; a receive that does
	// not wait returns nothing). A server bounds with it what its
	// receives hold in memory at once.
	Claim func(claim func() ([]Message, error)) ([]Message, error)
	// Keep, when set with Delete, is called with the messages each claim
	// took before their deletion commits: an error from it rolls the
	// claim back (the messages stay in the queue as they were, no
	// receive is counted) and the receive returns that error. With it a
	// claim takes a transaction of its own (a round trip more, its
	// COMMIT). A server bounds with it what its receives with delete
	// hold, which cannot give back what they took.
	Keep func([]Message) error
}

// Ack settles one message: Receipt fences it when non-zero.
type Ack struct {
	Sequence int64
	Receipt  Receipt
}

// Leases returns the Acks naming msgs as a receive returned them (each
// one's sequence and receipt), in order: what Ack and Release take to
// settle or give back those deliveries.
func Leases(msgs []Message) []Ack {
	acks := make([]Ack, len(msgs))
	for i, m := range msgs {
		acks[i] = Ack{Sequence: m.Sequence, Receipt: m.Receipt}
	}
	return acks
}

// Nack returns one message to its queue for a retry.
type Nack struct {
	Sequence int64
	Receipt  Receipt
	// Delay before the retry becomes visible (0 = now, at most 12h).
	Delay time.Duration
	// Error is recorded as the message's last error ("" keeps the previous).
	Error string
}

// Failure fails one message permanently: it moves to the DLQ at once.
type Failure struct {
	Sequence int64
	Receipt  Receipt
	// Reason is stored in the dead letter ("" means "permanent_failure").
	Reason string
	// Error is stored as the dead letter's last error ("" keeps the
	// previous one).
	Error string
}

func (m NewMessage) check(i int) error {
	if len(m.Body) == 0 {
		return newError(ErrInvalidArgument, "message %d: empty body: use a JSON value", i)
	}
	if err := checkDuration("delay", m.Delay, 12*time.Hour); err != nil {
		return err
	}
	if len(m.Group) > 128 {
		return newError(ErrInvalidArgument, "message %d: group of %d bytes: use 1 to 128 characters", i, len(m.Group))
	}
	if m.ExpiresIn != 0 {
		if err := checkDuration("expiration", m.ExpiresIn, 14*24*time.Hour); err != nil {
			return err
		}
	}
	return nil
}

func nullInt(v int, valid bool) *int {
	if !valid {
		return nil
	}
	return &v
}

func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Send sends one message and returns its sequence (or, for a repeated dedup
// key, the first message's sequence).
func (c *Client) Send(ctx context.Context, account, queue string, m NewMessage) (int64, error) {
	if c.co == nil || m.DedupKey != "" {
		return c.SendTx(ctx, c.pool, account, queue, m)
	}
	if err := m.check(0); err != nil {
		return 0, err
	}
	if err := c.checkStoredBytes(ctx, c.pool, account, "send to queue", queue); err != nil {
		return 0, err
	}
	seqs, err := c.co.send.Do(ctx, sendKey(account, queue, []NewMessage{m}), []NewMessage{m})
	if err != nil {
		return 0, err
	}
	return seqs[0], nil
}

// SendTx is Send inside the caller's transaction (or any DB): the message
// becomes visible only if and when tx commits.
func (c *Client) SendTx(ctx context.Context, tx DB, account, queue string, m NewMessage) (int64, error) {
	if err := m.check(0); err != nil {
		return 0, err
	}
	if err := c.checkStoredBytes(ctx, tx, account, "send to queue", queue); err != nil {
		return 0, err
	}
	var seq int64
	err := c.call(ctx, tx, "send to queue "+quote(queue), account, queue, "send", func(sql string, args []any) error {
		return tx.QueryRow(ctx, sql, args...).Scan(&seq)
	}, string(m.Body), seconds(m.Delay), rawOrNil(m.Headers), nullInt(seconds(m.ExpiresIn), m.ExpiresIn > 0),
		nullText(m.DedupKey), nullText(m.Group))
	if err != nil {
		return 0, err
	}
	c.counts.add(account, queue, 1, 0)
	return seq, nil
}

// SendBatch sends messages in one statement and returns their sequences in
// order. Up to 1000 messages; all or none are stored.
func (c *Client) SendBatch(ctx context.Context, account, queue string, ms []NewMessage) ([]int64, error) {
	if c.co == nil || len(ms) == 0 || len(ms) > maxStatement || hasDedupKey(ms) || mixedGroups(ms) {
		return c.SendBatchTx(ctx, c.pool, account, queue, ms)
	}
	for i, m := range ms {
		if err := m.check(i); err != nil {
			return nil, err
		}
	}
	if err := c.checkStoredBytes(ctx, c.pool, account, "send batch to queue", queue); err != nil {
		return nil, err
	}
	return c.co.send.Do(ctx, sendKey(account, queue, ms), ms)
}

// sendKey is the coalescing key of a send: sends with groups and sends
// without go into different statements, so that a fifo queue's refusal
// of ungrouped messages fails only those.
func sendKey(account, queue string, ms []NewMessage) string {
	if len(ms) > 0 && ms[0].Group != "" {
		return groupKey(account, queue, "g")
	}
	return groupKey(account, queue, "")
}

// mixedGroups reports whether some but not all of ms have a group.
func mixedGroups(ms []NewMessage) bool {
	with := 0
	for _, m := range ms {
		if m.Group != "" {
			with++
		}
	}
	return with > 0 && with < len(ms)
}

func hasDedupKey(ms []NewMessage) bool {
	for _, m := range ms {
		if m.DedupKey != "" {
			return true
		}
	}
	return false
}

// SendBatchTx is SendBatch inside the caller's transaction.
func (c *Client) SendBatchTx(ctx context.Context, tx DB, account, queue string, ms []NewMessage) ([]int64, error) {
	if len(ms) > 0 {
		if err := c.checkStoredBytes(ctx, tx, account, "send batch to queue", queue); err != nil {
			return nil, err
		}
	}
	return c.sendBatch(ctx, tx, account, queue, ms)
}

func (c *Client) sendBatch(ctx context.Context, tx DB, account, queue string, ms []NewMessage) ([]int64, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	args, err := sendBatchArgs(account, queue, ms)
	if err != nil {
		return nil, err
	}
	seqs, err := c.settle(ctx, tx, "send batch to queue "+quote(queue), account, queue, "send_batch", len(ms), args[2:]...)
	if err != nil {
		return nil, err
	}
	c.counts.add(account, queue, len(seqs), 0)
	return seqs, nil
}

// sendBatchArgs checks ms and returns the arguments of send_batch.
func sendBatchArgs(account, queue string, ms []NewMessage) ([]any, error) {
	bodies := make([]string, len(ms))
	var headers []*string
	var delays, expires []*int
	var keys, groups []*string
	for i, m := range ms {
		if err := m.check(i); err != nil {
			return nil, err
		}
		bodies[i] = string(m.Body)
		if len(m.Headers) > 0 {
			if headers == nil {
				headers = make([]*string, len(ms))
			}
			h := string(m.Headers)
			headers[i] = &h
		}
		if m.Delay > 0 {
			if delays == nil {
				delays = make([]*int, len(ms))
			}
			delays[i] = nullInt(seconds(m.Delay), true)
		}
		if m.ExpiresIn > 0 {
			if expires == nil {
				expires = make([]*int, len(ms))
			}
			expires[i] = nullInt(seconds(m.ExpiresIn), true)
		}
		if m.DedupKey != "" {
			if keys == nil {
				keys = make([]*string, len(ms))
			}
			keys[i] = nullText(m.DedupKey)
		}
		if m.Group != "" {
			if groups == nil {
				groups = make([]*string, len(ms))
			}
			groups[i] = nullText(m.Group)
		}
	}
	return []any{account, queue, bodies, headers, delays, expires, keys, groups}, nil
}

// Receive claims up to o.Max ready messages, leasing each for the
// visibility timeout. With o.Wait > 0 it long-polls: it returns as soon as
// a message is available, or an empty slice when the wait ends.
func (c *Client) Receive(ctx context.Context, account, queue string, o ReceiveOptions) ([]Message, error) {
	o, vt, err := o.lease()
	if err != nil {
		return nil, err
	}
	if err := checkDuration("wait", o.Wait, MaxWait); err != nil {
		return nil, err
	}
	msgs, err := c.receiveOnce(ctx, account, queue, o, vt)
	if err != nil || len(msgs) > 0 || o.Wait <= 0 {
		return msgs, err
	}
	return c.longPoll(ctx, account, queue, o, vt)
}

// lease returns o with its defaults (Max 1) and the lease it asks for in
// seconds (nil for the queue's visibility timeout, and with Delete).
func (o ReceiveOptions) lease() (ReceiveOptions, *int, error) {
	if o.Max == 0 {
		o.Max = 1
	}
	if err := checkDuration("visibility timeout", o.VisibilityTimeout, 12*time.Hour); err != nil {
		return o, nil, err
	}
	if o.VisibilityTimeout <= 0 || o.Delete {
		return o, nil, nil
	}
	return o, nullInt(seconds(o.VisibilityTimeout), true), nil
}

func (c *Client) longPoll(ctx context.Context, account, queue string, o ReceiveOptions, vt *int) ([]Message, error) {
	deadline := time.NewTimer(o.Wait)
	defer deadline.Stop()
	var wake <-chan struct{}
	if c.listener != nil {
		sub, err := c.listener.Subscribe(ctx, account, queue)
		if err == nil {
			defer sub.Close()
			wake = sub.C()
			// Receive once more: a message may have arrived before the
			// subscription was registered.
			msgs, err := c.receiveOnce(ctx, account, queue, o, vt)
			if err != nil || len(msgs) > 0 {
				return msgs, err
			}
		} else if !errors.Is(err, ErrListenerStopped) {
			return nil, err
		}
	}
	poll := time.NewTicker(c.poll)
	defer poll.Stop()
	for {
		if c.waiting != nil {
			c.waiting()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pgqueue: receive from queue %s: %w", quote(queue), ctx.Err())
		case <-deadline.C:
			return c.receiveOnce(ctx, account, queue, o, vt)
		case <-wake:
		case <-poll.C:
		}
		msgs, err := c.receiveOnce(ctx, account, queue, o, vt)
		if err != nil || len(msgs) > 0 {
			return msgs, err
		}
	}
}

func (c *Client) receiveOnce(ctx context.Context, account, queue string, o ReceiveOptions, vt *int) ([]Message, error) {
	if o.Claim == nil {
		return c.claim(ctx, account, queue, o, vt)
	}
	return o.Claim(func() ([]Message, error) { return c.claim(ctx, account, queue, o, vt) })
}

// claim runs one claim of a receive.
func (c *Client) claim(ctx context.Context, account, queue string, o ReceiveOptions, vt *int) ([]Message, error) {
	max := o.Max
	if o.Delete {
		return c.receiveDelete(ctx, account, queue, max, o.Keep)
	}
	if c.co == nil || max < 1 || max > maxStatement {
		return c.receiveRows(ctx, account, queue, max, vt)
	}
	v := ""
	if vt != nil {
		v = fmt.Sprint(*vt)
	}
	return c.co.receive.Do(ctx, groupKey(account, queue, v), max)
}

func (c *Client) receiveRows(ctx context.Context, account, queue string, max int, vt *int) ([]Message, error) {
	return c.receiveCall(ctx, "receive from queue "+quote(queue), account, queue, "receive", max, max, vt)
}

// receiveCall runs a statement returning messages on the pool (see call).
func (c *Client) receiveCall(ctx context.Context, op, account, queue, stmt string, max int, args ...any) ([]Message, error) {
	var msgs []Message
	err := c.call(ctx, c.pool, op, account, queue, stmt, func(sql string, args []any) error {
		rows, err := c.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		msgs, err = scanMessages(rows, max)
		return err
	}, args...)
	return msgs, err
}

// receiveDelete claims and deletes up to max messages in one statement;
// with keep, in a transaction that commits only if keep accepts them
// (ReceiveOptions.Keep).
func (c *Client) receiveDelete(ctx context.Context, account, queue string, max int, keep func([]Message) error) ([]Message, error) {
	op := "receive with delete from queue " + quote(queue)
	var msgs []Message
	var err error
	if keep == nil {
		msgs, err = c.receiveCall(ctx, op, account, queue, "receive_delete", max, max)
	} else {
		msgs, err = c.receiveDeleteKept(ctx, op, account, queue, max, keep)
	}
	if err != nil {
		return nil, err
	}
	c.counts.add(account, queue, 0, len(msgs))
	return msgs, nil
}

// receiveDeleteKept claims and deletes up to max messages in a
// transaction that commits only if keep accepts them, and returns keep's
// error as it is.
func (c *Client) receiveDeleteKept(ctx context.Context, op, account, queue string, max int, keep func([]Message) error) ([]Message, error) {
	var msgs []Message
	err := c.byID(ctx, op, account, queue, func(id int64) error {
		var err error
		msgs, err = c.claimDeleteKept(ctx, op, id, account, queue, max, keep)
		return err
	})
	return msgs, err
}

// claimDeleteKept runs one claim of receiveDeleteKept on the queue with
// id. BEGIN goes out with the claim, so that it costs one round trip more
// than a claim alone (the COMMIT or ROLLBACK), not two.
func (c *Client) claimDeleteKept(ctx context.Context, op string, id int64, account, queue string, max int, keep func([]Message) error) ([]Message, error) {
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return nil, convertError(op, err)
	}
	// A connection left in its transaction by an error is closed by the
	// pool rather than reused.
	defer conn.Release()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(c.q.get("receive_delete_id"), id, account, queue, max)
	res := conn.SendBatch(ctx, b)
	var msgs []Message
	if _, err = res.Exec(); err == nil {
		var rows pgx.Rows
		if rows, err = res.Query(); err == nil {
			msgs, err = scanMessages(rows, max)
		}
	}
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if err = keep(msgs); err == nil {
			_, err = conn.Exec(ctx, "COMMIT")
			return msgs, convertError(op, err)
		}
	} else {
		err = convertError(op, err)
	}
	// The rollback is given a few seconds whatever ctx, then the
	// connection is closed (the server rolls back a transaction whose
	// connection ends).
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, rerr := conn.Exec(rctx, "ROLLBACK"); rerr != nil {
		conn.Conn().Close(rctx) //nolint:errcheck // the pool drops it either way
	}
	return nil, err
}

// scanMessages reads the messages rows returns, of which there are at
// most capacity. The slice grows with the rows: a receive asking for up
// to 1,000 messages mostly gets a few (a trigger's claim on a queue
// receiving one message at a time), and 1,000 Messages of room is 144 KiB
// per call for the garbage collector.
func scanMessages(rows pgx.Rows, capacity int, extra ...any) ([]Message, error) {
	defer rows.Close()
	msgs := make([]Message, 0, max(0, min(capacity, initialRows)))
	// The scan targets escape (Scan takes them as interfaces): declared
	// once, they cost one allocation per call instead of one per row.
	var m Message
	var receipt pgtype.UUID
	var count int32
	var group pgtype.Text
	// Body and Headers as []byte: pgx copies a jsonb value into a *[]byte
	// as it is, where a *json.RawMessage (a json.Unmarshaler) goes through
	// encoding/json, which scans it again. extra takes the columns past
	// the message's (the same for every row).
	dest := append([]any{&m.Sequence, (*[]byte)(&m.Body), (*[]byte)(&m.Headers), &count, &m.CreatedAt, &m.VisibleAt, &receipt, &group}, extra...)
	for rows.Next() {
		m, receipt, group = Message{}, pgtype.UUID{}, pgtype.Text{}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		m.Group = group.String
		m.ReceiveCount = int(count)
		if receipt.Valid {
			m.Receipt = receipt.Bytes
		}
		msgs = append(msgs, m)
	}
	return msgs, rows.Err()
}

// initialRows is the room scanMessages starts with.
const initialRows = 16

// Delete deletes (acknowledges) one message. A non-zero receipt fences the
// delete: ErrStaleReceipt if the message was received again since, leaving
// the newer lease intact. ErrMessageNotFound if there is no such message.
func (c *Client) Delete(ctx context.Context, account, queue string, sequence int64, receipt Receipt) error {
	var ok bool
	err := c.call(ctx, c.pool, fmt.Sprintf("delete message %d from queue %s", sequence, quote(queue)), account, queue, "delete",
		func(sql string, args []any) error { return c.pool.QueryRow(ctx, sql, args...).Scan(&ok) },
		sequence, receipt.uuid(), !c.syncAcks)
	if err != nil {
		return err
	}
	if !ok {
		return newError(ErrMessageNotFound, "message %d not found in queue %s", sequence, quote(queue))
	}
	c.counts.add(account, queue, 0, 1)
	return nil
}

// ChangeVisibility sets a message's lease to end d from now (0 makes it
// ready at once). A non-zero receipt fences it like Delete.
func (c *Client) ChangeVisibility(ctx context.Context, account, queue string, sequence int64, receipt Receipt, d time.Duration) error {
	if err := checkDuration("visibility", d, 12*time.Hour); err != nil {
		return err
	}
	var ok bool
	err := c.call(ctx, c.pool, fmt.Sprintf("change visibility of message %d in queue %s", sequence, quote(queue)), account, queue, "set_visibility",
		func(sql string, args []any) error { return c.pool.QueryRow(ctx, sql, args...).Scan(&ok) },
		sequence, seconds(d), receipt.uuid())
	if err != nil {
		return err
	}
	if !ok {
		return newError(ErrMessageNotFound, "message %d not found in queue %s", sequence, quote(queue))
	}
	return nil
}

// Ack deletes many messages in one statement and returns the sequences it
// deleted; entries with a stale receipt or already gone are left out.
func (c *Client) Ack(ctx context.Context, account, queue string, acks []Ack) ([]int64, error) {
	if len(acks) == 0 {
		return nil, nil
	}
	if c.co != nil && len(acks) <= maxStatement {
		return c.co.ack.Do(ctx, groupKey(account, queue), acks)
	}
	return c.ack(ctx, account, queue, acks)
}

// AckTx is Ack inside the caller's transaction (no coalescing, and the
// transaction's own commit settings).
func (c *Client) AckTx(ctx context.Context, tx DB, account, queue string, acks []Ack) ([]int64, error) {
	if len(acks) == 0 {
		return nil, nil
	}
	seqs, receipts := ackArgs(acks)
	if c.onPool(tx) {
		// The pool's ack commits synchronously here: AckTx promises the
		// transaction's own commit settings.
		return c.ackByID(ctx, account, queue, seqs, receipts, false)
	}
	out, err := c.settle(ctx, tx, "ack messages in queue "+quote(queue), account, queue, "ack", len(acks), seqs, receipts)
	if err != nil {
		return nil, err
	}
	c.counts.add(account, queue, 0, len(out))
	return out, nil
}

func ackArgs(acks []Ack) ([]int64, []pgtype.UUID) {
	seqs := make([]int64, len(acks))
	var receipts []pgtype.UUID
	for i, a := range acks {
		seqs[i] = a.Sequence
		if !a.Receipt.IsZero() {
			if receipts == nil {
				receipts = make([]pgtype.UUID, len(acks))
			}
			receipts[i] = a.Receipt.uuid()
		}
	}
	return seqs, receipts
}

func (c *Client) ack(ctx context.Context, account, queue string, acks []Ack) ([]int64, error) {
	seqs, receipts := ackArgs(acks)
	return c.ackByID(ctx, account, queue, seqs, receipts, !c.syncAcks)
}

// ackByID acknowledges on the pool by queue id; async commits without
// waiting for the disk, set inside queue_ack so that it applies on the
// node that deletes (a Citus worker).
func (c *Client) ackByID(ctx context.Context, account, queue string, seqs []int64, receipts []pgtype.UUID, async bool) ([]int64, error) {
	out, err := c.settle(ctx, c.pool, "ack messages in queue "+quote(queue), account, queue, "ack", len(seqs), seqs, receipts, async)
	if err != nil {
		return nil, err
	}
	c.counts.add(account, queue, 0, len(out))
	return out, nil
}

// Nack makes many messages visible again after their delays, recording
// their errors, in one statement. It returns the sequences updated. A
// message on its last allowed delivery moves to the DLQ when the delay
// ends.
func (c *Client) Nack(ctx context.Context, account, queue string, nacks []Nack) ([]int64, error) {
	return c.NackTx(ctx, c.pool, account, queue, nacks)
}

// NackTx is Nack inside the caller's transaction.
func (c *Client) NackTx(ctx context.Context, tx DB, account, queue string, nacks []Nack) ([]int64, error) {
	if len(nacks) == 0 {
		return nil, nil
	}
	args, err := nackArgs(account, queue, nacks)
	if err != nil {
		return nil, err
	}
	return c.settle(ctx, tx, "nack messages in queue "+quote(queue), account, queue, "nack", len(nacks), args[2:]...)
}

func nackArgs(account, queue string, nacks []Nack) ([]any, error) {
	seqs := make([]int64, len(nacks))
	receipts := make([]pgtype.UUID, len(nacks))
	delays := make([]int32, len(nacks))
	errs := make([]*string, len(nacks))
	for i, n := range nacks {
		if err := checkDuration("retry delay", n.Delay, 12*time.Hour); err != nil {
			return nil, err
		}
		seqs[i], receipts[i], delays[i], errs[i] = n.Sequence, n.Receipt.uuid(), int32(seconds(n.Delay)), nullText(n.Error)
	}
	return []any{account, queue, seqs, receipts, delays, errs}, nil
}

// Release gives back the leases of messages that were received but never
// handed to a consumer (a claim taken ahead of its use and given up). Unlike
// a Nack, the claim does not count as a delivery: each message is visible
// again at once with the receive count it had before it was received, so it
// loses no attempt and does not reach the DLQ without having run. Only
// leases still held with the given receipts are released, and those
// receipts are no longer current afterwards; it returns the sequences
// released.
func (c *Client) Release(ctx context.Context, account, queue string, leases []Ack) ([]int64, error) {
	if len(leases) == 0 {
		return nil, nil
	}
	seqs := make([]int64, len(leases))
	receipts := make([]pgtype.UUID, len(leases))
	for i, l := range leases {
		seqs[i], receipts[i] = l.Sequence, l.Receipt.uuid()
	}
	return c.settle(ctx, c.pool, "release messages in queue "+quote(queue), account, queue, "release", len(leases), seqs, receipts)
}

// Fail moves many messages to the DLQ at once (permanent failure) and
// returns the sequences moved.
func (c *Client) Fail(ctx context.Context, account, queue string, fails []Failure) ([]int64, error) {
	return c.FailTx(ctx, c.pool, account, queue, fails)
}

// FailTx is Fail inside the caller's transaction.
func (c *Client) FailTx(ctx context.Context, tx DB, account, queue string, fails []Failure) ([]int64, error) {
	if len(fails) == 0 {
		return nil, nil
	}
	return c.settle(ctx, tx, "fail messages in queue "+quote(queue), account, queue, "fail", len(fails), failArgs(account, queue, fails)[2:]...)
}

func failArgs(account, queue string, fails []Failure) []any {
	seqs := make([]int64, len(fails))
	receipts := make([]pgtype.UUID, len(fails))
	reasons := make([]*string, len(fails))
	errs := make([]*string, len(fails))
	for i, f := range fails {
		seqs[i], receipts[i], reasons[i], errs[i] = f.Sequence, f.Receipt.uuid(), nullText(f.Reason), nullText(f.Error)
	}
	return []any{account, queue, seqs, receipts, reasons, errs}
}

// settle runs a hot-path statement returning sequences (see call).
func (c *Client) settle(ctx context.Context, tx DB, op, account, queue, stmt string, n int, args ...any) ([]int64, error) {
	var out []int64
	err := c.call(ctx, tx, op, account, queue, stmt, func(sql string, args []any) error {
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		out, err = collectSequences(rows, n)
		return err
	}, args...)
	return out, err
}

// call runs one hot-path statement through run. On the client's pool it
// is the by-id form, stmt + "_id", whose arguments are the queue's id,
// account and name and then args (see byID); on any other db (a caller's
// transaction) the by-name form stmt, with account and name and then
// args. Errors are converted naming op.
func (c *Client) call(ctx context.Context, db DB, op, account, queue, stmt string, run func(sql string, args []any) error, args ...any) error {
	if !c.onPool(db) {
		return convertError(op, run(c.q.get(stmt), append([]any{account, queue}, args...)))
	}
	return c.byID(ctx, op, account, queue, func(id int64) error {
		return convertError(op, run(c.q.get(stmt+"_id"), append([]any{id, account, queue}, args...)))
	})
}

func collectSequences(rows pgx.Rows, n int) ([]int64, error) {
	defer rows.Close()
	out := make([]int64, 0, n)
	for rows.Next() {
		var s int64
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Peek returns up to max messages that Receive would return next, without
// claiming them (their Receipt is zero).
func (c *Client) Peek(ctx context.Context, account, queue string, max int) ([]Message, error) {
	return c.peek(ctx, queue, "peek", max, nil, account, queue, max)
}

// PeekAfter returns up to max (1 to 1000) of the messages Peek would show
// whose sequence is above after, in sequence order, holding at most
// MaxPageBytes (or the first alone, when larger). Page through a queue by passing the last
// sequence of one page as after for the next, for as long as more is
// set: the page is full, or its bytes left messages out (a page without
// more is the last).
func (c *Client) PeekAfter(ctx context.Context, account, queue string, after int64, max int) (msgs []Message, more bool, err error) {
	var cut bool
	msgs, err = c.peek(ctx, queue, "peek_after", max, []any{&cut}, account, queue, after, max, MaxPageBytes)
	return msgs, cut || len(msgs) == max, err
}

// MaxPageBytes is the most bytes of bodies and headers (and of dead
// letters' last errors) that a page of PeekAfter or ReceiveDLQAfter holds;
// its first message it holds whatever its size. With messages of 1 MiB
// and no headers, a page holds 8 of them. It bounds what a page costs
// the database's client to hold and send.
const MaxPageBytes = 8 << 20

// peek reads the (at most max) messages query returns; extra takes the
// columns past a message's.
func (c *Client) peek(ctx context.Context, queue, query string, max int, extra []any, args ...any) ([]Message, error) {
	rows, err := c.pool.Query(ctx, c.q.get(query), args...)
	if err != nil {
		return nil, convertError("peek queue "+quote(queue), err)
	}
	msgs, err := scanMessages(rows, min(max, 100), extra...)
	return msgs, convertError("peek queue "+quote(queue), err)
}

// Purge deletes every message of a queue (not its dead letters) and
// returns how many.
func (c *Client) Purge(ctx context.Context, account, queue string) (int64, error) {
	var n int64
	err := c.pool.QueryRow(ctx, c.q.get("purge"), account, queue).Scan(&n)
	return n, convertError("purge queue "+quote(queue), err)
}
