package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sluicehq/sluice/wire"
)

// Limits of the data plane, checked by the client before sending.
const (
	MaxBatch             = 10      // messages per send batch and per receive
	MaxWaitSeconds       = 20      // long-poll wait of a receive
	MaxDelaySeconds      = 43200   // delay of a send
	MaxTTLSeconds        = 1209600 // time to live (expiration) of a sent message
	MaxEntries           = 1000    // entries per SendEntries
	MaxDedupKeyLength    = 128     // characters of a dedup key
	MaxVisibilitySeconds = 43200   // visibility timeout or change
	MaxPeek              = 100     // messages per peek or DLQ read
)

// MQService is the data plane of the client's account: sending, receiving
// and acknowledging messages, and the dead-letter queues.
type MQService struct{ c *Client }

// Message is a message as received or peeked. Its Receipt is the lease
// token of a received message ("" when peeked): pass it to Delete or
// ChangeVisibility to fence a stale lease.
type Message = wire.Message

// DeadLetter is a message in a dead-letter queue; its Reason says why it
// died, e.g. max_receive_count or permanent.
type DeadLetter = wire.DeadLetter

// SendOptions tune a send; they apply to every message of it.
type SendOptions struct {
	// DelaySeconds keeps the messages invisible that long (0 to 43200).
	DelaySeconds int
	// TTLSeconds, when positive, is the messages' time to live (1 to
	// 1209600; the API's expires_in_seconds): they are never delivered
	// after it.
	TTLSeconds int
	// Headers are attributes stored and returned with each message.
	Headers map[string]string
	// DedupKey makes a repeat send within the queue's dedup window return
	// the first message's sequence (single sends only).
	DedupKey string
	// Group puts the messages into an ordered group (1 to 128
	// characters): a group's messages are delivered in order, one at a
	// time. A fifo queue requires one.
	Group string
}

// SendEntry is one message of SendEntries with its own options (body,
// headers, delay_seconds, expires_in_seconds, dedup_key).
type SendEntry = wire.SendEntry

// ReceiveOptions tune a receive.
type ReceiveOptions struct {
	// MaxMessages is how many messages to claim at most (1 to 10; 0 means 1).
	MaxMessages int
	// WaitSeconds long-polls up to that long for a first message (0 to 20).
	WaitSeconds int
	// VisibilityTimeoutSeconds is the lease (1 to 43200; 0 means the
	// queue's visibility timeout).
	VisibilityTimeoutSeconds int
	// Delete deletes the messages in the statement that receives them:
	// at-most-once delivery, none is ever returned twice. They come
	// without a receipt. It needs the mq:delete scope.
	Delete bool
}

// encodeBody returns body as JSON: []byte and json.RawMessage must already
// be JSON and are sent as they are; anything else is marshaled.
func encodeBody(body any) (json.RawMessage, error) {
	var b []byte
	switch v := body.(type) {
	case json.RawMessage:
		b = v
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(body); err != nil {
			return nil, invalidf("message body: %v", err)
		}
	}
	b = bytes.TrimSpace(b)
	if !json.Valid(b) {
		return nil, &Error{Code: CodeInvalidJSON, Message: "message body: not valid JSON"}
	}
	return b, nil
}

func lastOf[T any](opts []T) T {
	var o T
	if len(opts) > 0 {
		o = opts[len(opts)-1]
	}
	return o
}

func sendQuery(o SendOptions) (url.Values, error) {
	if err := checkRange("delay_seconds", o.DelaySeconds, 0, MaxDelaySeconds); err != nil {
		return nil, err
	}
	if o.TTLSeconds != 0 {
		if err := checkRange("ttl (expires_in_seconds)", o.TTLSeconds, 1, MaxTTLSeconds); err != nil {
			return nil, err
		}
	}
	if o.DedupKey != "" && len(o.DedupKey) > MaxDedupKeyLength {
		return nil, invalidf("dedup key of %d characters: use 1 to %d", len(o.DedupKey), MaxDedupKeyLength)
	}
	q := url.Values{}
	if o.DelaySeconds > 0 {
		q.Set("delay_seconds", strconv.Itoa(o.DelaySeconds))
	}
	if o.TTLSeconds > 0 {
		q.Set("expires_in_seconds", strconv.Itoa(o.TTLSeconds))
	}
	if o.DedupKey != "" {
		q.Set("dedup_key", o.DedupKey)
	}
	if len(o.Group) > MaxDedupKeyLength {
		return nil, invalidf("group of %d characters: use 1 to %d", len(o.Group), MaxDedupKeyLength)
	}
	if o.Group != "" {
		q.Set("group", o.Group)
	}
	return q, nil
}

// Send sends one message to queue and returns its sequence. body is any
// JSON value: json.RawMessage or []byte holding JSON, or a value to
// marshal. The API takes a JSON object as one message; any other body (an
// array, a string, a number) is sent as a batch of one.
func (s *MQService) Send(ctx context.Context, queue string, body any, opts ...SendOptions) (int64, error) {
	if err := checkName("queue", queue); err != nil {
		return 0, err
	}
	b, err := encodeBody(body)
	if err != nil {
		return 0, err
	}
	o := lastOf(opts)
	q, err := sendQuery(o)
	if err != nil {
		return 0, err
	}
	if o.Headers != nil {
		// Headers travel only in entries.
		seqs, err := s.SendEntries(ctx, queue, []SendEntry{o.entry(b)})
		if err != nil {
			return 0, err
		}
		if len(seqs) != 1 {
			return 0, fmt.Errorf("client: send to queue %s: got %d sequences for one message", queue, len(seqs))
		}
		return seqs[0], nil
	}
	if b[0] != '{' {
		if o.DedupKey != "" {
			return 0, invalidf("dedup key: the API takes one only with a JSON object body")
		}
		seqs, err := s.sendBatch(ctx, queue, []json.RawMessage{b}, q)
		if err != nil {
			return 0, err
		}
		if len(seqs) != 1 {
			return 0, fmt.Errorf("client: send to queue %s: got %d sequences for one message", queue, len(seqs))
		}
		return seqs[0], nil
	}
	var out wire.SendResult
	err = s.c.do(ctx, request{method: http.MethodPost, path: s.c.queuePath(queue, "messages"), query: q, raw: b, contentType: "application/json"}, &out)
	return out.Sequence, err
}

// SendBatch sends 1 to 10 messages to queue in one transaction and returns
// their sequences in order. Each body is encoded as for Send.
func (s *MQService) SendBatch(ctx context.Context, queue string, bodies []any, opts ...SendOptions) ([]int64, error) {
	if err := checkName("queue", queue); err != nil {
		return nil, err
	}
	if len(bodies) < 1 || len(bodies) > MaxBatch {
		return nil, invalidf("batch of %d messages: send 1 to %d", len(bodies), MaxBatch)
	}
	o := lastOf(opts)
	if o.DedupKey != "" {
		return nil, invalidf("dedup key: only a single send takes one")
	}
	q, err := sendQuery(o)
	if err != nil {
		return nil, err
	}
	raws, err := encodeBodies(bodies)
	if err != nil {
		return nil, err
	}
	if o.Headers != nil {
		entries := make([]SendEntry, len(raws))
		for i, b := range raws {
			entries[i] = o.entry(b)
		}
		return s.SendEntries(ctx, queue, entries)
	}
	return s.sendBatch(ctx, queue, raws, q)
}

// encodeBodies encodes each body of a batch as encodeBody does.
func encodeBodies(bodies []any) ([]json.RawMessage, error) {
	raws := make([]json.RawMessage, len(bodies))
	for i, body := range bodies {
		var err error
		if raws[i], err = encodeBody(body); err != nil {
			return nil, fmt.Errorf("message %d of the batch: %w", i, err)
		}
	}
	return raws, nil
}

// entry is one message with these options, as an entry.
func (o SendOptions) entry(body json.RawMessage) SendEntry {
	return SendEntry{Body: body, Headers: o.Headers, DelaySeconds: o.DelaySeconds, ExpiresInSeconds: o.TTLSeconds, DedupKey: o.DedupKey, Group: o.Group}
}

// SendEntries sends 1 to 1000 entries to queue in one transaction, each
// with its own headers, delay, expiration and dedup key, and returns
// their sequences in order (a repeated dedup key returns the first
// message's sequence). Each Body must be JSON (not null).
func (s *MQService) SendEntries(ctx context.Context, queue string, entries []SendEntry) ([]int64, error) {
	if err := checkName("queue", queue); err != nil {
		return nil, err
	}
	if len(entries) < 1 || len(entries) > MaxEntries {
		return nil, invalidf("%d entries: send 1 to %d", len(entries), MaxEntries)
	}
	for i, e := range entries {
		if err := checkEntry(e); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
	}
	var out wire.SendBatchResult
	err := s.c.do(ctx, request{method: http.MethodPost, path: s.c.queuePath(queue, "messages", "entries"),
		body: wire.SendEntriesRequest{Entries: entries}}, &out)
	return out.Sequences, err
}

func checkEntry(e SendEntry) error {
	b := bytes.TrimSpace(e.Body)
	if len(b) == 0 || string(b) == "null" {
		return invalidf("no body: give any JSON value but null")
	}
	if !json.Valid(b) {
		return &Error{Code: CodeInvalidJSON, Message: "message body: not valid JSON"}
	}
	if err := checkRange("delay_seconds", e.DelaySeconds, 0, MaxDelaySeconds); err != nil {
		return err
	}
	if e.ExpiresInSeconds != 0 {
		if err := checkRange("expires_in_seconds", e.ExpiresInSeconds, 1, MaxTTLSeconds); err != nil {
			return err
		}
	}
	if len(e.Group) > MaxDedupKeyLength {
		return invalidf("group of %d characters: use 1 to %d", len(e.Group), MaxDedupKeyLength)
	}
	if len(e.DedupKey) > MaxDedupKeyLength {
		return invalidf("dedup key of %d characters: use 1 to %d", len(e.DedupKey), MaxDedupKeyLength)
	}
	return nil
}

func (s *MQService) sendBatch(ctx context.Context, queue string, bodies []json.RawMessage, q url.Values) ([]int64, error) {
	var out wire.SendBatchResult
	err := s.c.do(ctx, request{method: http.MethodPost, path: s.c.queuePath(queue, "messages"), query: q, body: bodies}, &out)
	return out.Sequences, err
}

// Receive claims up to o.MaxMessages ready messages of queue, leasing them
// for the visibility timeout, waiting up to o.WaitSeconds for the first
// one. It returns an empty slice when none came.
func (s *MQService) Receive(ctx context.Context, queue string, o ReceiveOptions) ([]Message, error) {
	if err := checkName("queue", queue); err != nil {
		return nil, err
	}
	if o.MaxMessages == 0 {
		o.MaxMessages = 1
	}
	if err := checkRange("max_messages", o.MaxMessages, 1, MaxBatch); err != nil {
		return nil, err
	}
	if err := checkRange("wait_seconds", o.WaitSeconds, 0, MaxWaitSeconds); err != nil {
		return nil, err
	}
	if err := checkRange("visibility_timeout_seconds", o.VisibilityTimeoutSeconds, 0, MaxVisibilitySeconds); err != nil {
		return nil, err
	}
	body := wire.ReceiveRequest{MaxMessages: o.MaxMessages, WaitSeconds: o.WaitSeconds,
		VisibilityTimeoutSeconds: o.VisibilityTimeoutSeconds, Delete: o.Delete}
	return listOf[Message](ctx, s.c, request{method: http.MethodPost, path: s.c.queuePath(queue, "messages", "receive"), body: body}, "messages")
}

// seqPath checks a message's sequence and formats it for a path.
func seqPath(queue string, sequence int64) (string, error) {
	if err := checkName("queue", queue); err != nil {
		return "", err
	}
	if sequence < 1 {
		return "", invalidf("sequence %d: must be positive", sequence)
	}
	return strconv.FormatInt(sequence, 10), nil
}

// Delete deletes (acknowledges) message sequence of queue. A non-empty
// receipt fences it: when the message was received again since, the
// delete is refused with ErrStaleReceipt and the newer lease stays.
func (s *MQService) Delete(ctx context.Context, queue string, sequence int64, receipt string) error {
	seq, err := seqPath(queue, sequence)
	if err != nil {
		return err
	}
	var q url.Values
	if receipt != "" {
		q = url.Values{"receipt": {receipt}}
	}
	return s.c.do(ctx, request{method: http.MethodDelete, path: s.c.queuePath(queue, "messages", seq), query: q}, nil)
}

// ChangeVisibility makes message sequence of queue visible again in
// seconds (0 to 43200; 0 retries it now). A non-empty receipt fences it as
// for Delete.
func (s *MQService) ChangeVisibility(ctx context.Context, queue string, sequence int64, seconds int, receipt string) error {
	seq, err := seqPath(queue, sequence)
	if err != nil {
		return err
	}
	if err := checkRange("seconds", seconds, 0, MaxVisibilitySeconds); err != nil {
		return err
	}
	body := wire.VisibilityRequest{Seconds: seconds, Receipt: receipt}
	return s.c.do(ctx, request{method: http.MethodPost, path: s.c.queuePath(queue, "messages", seq, "visibility"), body: body}, nil)
}

// Purge deletes every message of queue (not its DLQ) and returns how many.
func (s *MQService) Purge(ctx context.Context, queue string) (int64, error) {
	if err := checkName("queue", queue); err != nil {
		return 0, err
	}
	var out wire.PurgeResult
	err := s.c.do(ctx, request{method: http.MethodDelete, path: s.c.queuePath(queue, "messages")}, &out)
	return out.Purged, err
}

// PageOptions page through a peek or DLQ read.
type PageOptions struct {
	// After returns only messages whose sequence is above it (0: from the
	// start). Pass a page's Next (PeekPage, ReceiveDLQPage) to get the
	// next page.
	After int64
}

// MessagePage is a page of a peek: its messages and, while more may
// follow, Next, the After of the next page (0 on the last page). A page
// holds fewer than asked when its bodies and headers would pass 8 MiB, so go
// by Next rather than by the page's length.
type MessagePage = wire.MessageList

// DeadLetterPage is a page of a DLQ read, as MessagePage.
type DeadLetterPage = wire.DeadLetterList

// pageQuery checks a max_messages of a peek or DLQ read (0: the server's
// default of 10) and the page's after.
func pageQuery(max int, opts []PageOptions) (url.Values, error) {
	q := url.Values{}
	if max != 0 {
		if err := checkRange("max_messages", max, 1, MaxPeek); err != nil {
			return nil, err
		}
		q.Set("max_messages", strconv.Itoa(max))
	}
	if o := lastOf(opts); o.After != 0 {
		if o.After < 0 {
			return nil, invalidf("after %d: must be 0 or a sequence", o.After)
		}
		q.Set("after", strconv.FormatInt(o.After, 10))
	}
	return q, nil
}

// Peek returns up to max ready messages of queue without claiming them (1
// to 100; 0 means 10), in sequence order, from the start or after
// opts.After. Peeked messages carry no receipt. To page through a queue,
// use PeekPage.
func (s *MQService) Peek(ctx context.Context, queue string, max int, opts ...PageOptions) ([]Message, error) {
	p, err := s.PeekPage(ctx, queue, max, opts...)
	return p.Messages, err
}

// PeekPage is Peek with the page's Next: pass it as the next call's
// PageOptions.After for as long as it is not 0.
func (s *MQService) PeekPage(ctx context.Context, queue string, max int, opts ...PageOptions) (MessagePage, error) {
	return page[MessagePage](ctx, s, queue, "messages", max, opts)
}

// ReceiveDLQ returns up to max dead letters of queue (1 to 100; 0 means
// 10) in sequence order, from the start or after opts.After. They stay in
// the DLQ until deleted or redriven. To page through a DLQ, use
// ReceiveDLQPage.
func (s *MQService) ReceiveDLQ(ctx context.Context, queue string, max int, opts ...PageOptions) ([]DeadLetter, error) {
	p, err := s.ReceiveDLQPage(ctx, queue, max, opts...)
	return p.Messages, err
}

// ReceiveDLQPage is ReceiveDLQ with the page's Next, as PeekPage.
func (s *MQService) ReceiveDLQPage(ctx context.Context, queue string, max int, opts ...PageOptions) (DeadLetterPage, error) {
	return page[DeadLetterPage](ctx, s, queue, "dlq", max, opts)
}

// page reads a page of a peek (resource "messages") or DLQ read ("dlq").
func page[P MessagePage | DeadLetterPage](ctx context.Context, s *MQService, queue, resource string, max int, opts []PageOptions) (P, error) {
	var out P
	if err := checkName("queue", queue); err != nil {
		return out, err
	}
	q, err := pageQuery(max, opts)
	if err != nil {
		return out, err
	}
	err = s.c.do(ctx, request{method: http.MethodGet, path: s.c.queuePath(queue, resource), query: q}, &out)
	return out, err
}

// DeleteDLQ deletes dead letter sequence of queue.
func (s *MQService) DeleteDLQ(ctx context.Context, queue string, sequence int64) error {
	seq, err := seqPath(queue, sequence)
	if err != nil {
		return err
	}
	return s.c.do(ctx, request{method: http.MethodDelete, path: s.c.queuePath(queue, "dlq", seq)}, nil)
}

// PurgeDLQ deletes every dead letter of queue and returns how many.
func (s *MQService) PurgeDLQ(ctx context.Context, queue string) (int64, error) {
	if err := checkName("queue", queue); err != nil {
		return 0, err
	}
	var out wire.PurgeResult
	err := s.c.do(ctx, request{method: http.MethodDelete, path: s.c.queuePath(queue, "dlq")}, &out)
	return out.Purged, err
}

// Redrive moves up to max dead letters of queue back into it with their
// receive counts reset (0: all of them; the first failed go first) and
// returns how many moved.
func (s *MQService) Redrive(ctx context.Context, queue string, max int) (int64, error) {
	if max < 0 {
		return 0, invalidf("max_messages %d: must be positive (0 redrives all)", max)
	}
	return s.redrive(ctx, queue, wire.RedriveRequest{MaxMessages: max})
}

// MaxRedriveSequences is the most sequences one RedriveSequences takes.
const MaxRedriveSequences = 1000

// RedriveSequences moves the dead letters of queue with the given
// sequences (1 to 1000, each once) back into it with their receive counts
// reset, and returns how many moved: sequences not in the DLQ are skipped.
func (s *MQService) RedriveSequences(ctx context.Context, queue string, sequences []int64) (int64, error) {
	if len(sequences) < 1 || len(sequences) > MaxRedriveSequences {
		return 0, invalidf("%d sequences: give 1 to %d", len(sequences), MaxRedriveSequences)
	}
	return s.redrive(ctx, queue, wire.RedriveRequest{Sequences: sequences})
}

func (s *MQService) redrive(ctx context.Context, queue string, body wire.RedriveRequest) (int64, error) {
	if err := checkName("queue", queue); err != nil {
		return 0, err
	}
	var out wire.RedriveResult
	err := s.c.do(ctx, request{method: http.MethodPost, path: s.c.queuePath(queue, "dlq", "redrive"), body: body}, &out)
	return out.Redriven, err
}
