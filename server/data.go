package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/wire"
)

func rawOrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// toMessages is ms on the wire.
func toMessages(ms []pgqueue.Message) []wire.Message {
	out := make([]wire.Message, len(ms))
	for i, m := range ms {
		out[i] = wire.Message{Sequence: m.Sequence, Body: rawOrNull(m.Body), Headers: rawOrNull(m.Headers),
			CreatedAt: m.CreatedAt.UTC(), ReceiveCount: m.ReceiveCount, VisibleAt: m.VisibleAt.UTC(), Group: m.Group}
		if !m.Receipt.IsZero() {
			out[i].Receipt = m.Receipt.String()
		}
	}
	return out
}

// sendRequest is what a send's body and query say.
type sendRequest struct {
	single   json.RawMessage   // one message
	batch    []json.RawMessage // or a batch
	delay    time.Duration
	expires  time.Duration
	dedupKey string
	group    string // every message's group
}

// querySeconds reads a whole number of seconds in [min, max] from a query
// parameter given at most once (0 when absent).
func querySeconds(query map[string][]string, name string, min, max int64) (time.Duration, error) {
	vals, ok := query[name]
	if !ok {
		return 0, nil
	}
	if len(vals) != 1 {
		return 0, badRequest("query parameter %s is given %d times: give it once", name, len(vals))
	}
	n, err := integer(name, vals[0], min, max)
	return time.Duration(n) * time.Second, err
}

// decodeSend parses a send: body (already read) and query.
func decodeSend(body []byte, query map[string][]string) (sendRequest, error) {
	var req sendRequest
	if err := checkJSON(body); err != nil {
		return req, err
	}
	delay, err := querySeconds(query, "delay_seconds", 0, maxDelay)
	if err != nil {
		return req, err
	}
	expires, err := querySeconds(query, "expires_in_seconds", 1, maxExpires)
	if err != nil {
		return req, err
	}
	req.delay, req.expires = delay, expires
	if k, ok := query["dedup_key"]; ok {
		if len(k) != 1 || len(k[0]) < 1 || len(k[0]) > 128 {
			return req, badRequest("invalid dedup_key: give it once, 1 to 128 characters")
		}
		req.dedupKey = k[0]
	}
	if g, ok := query["group"]; ok {
		if len(g) != 1 || len(g[0]) < 1 || len(g[0]) > 128 {
			return req, badRequest("invalid group: give it once, 1 to 128 characters")
		}
		req.group = g[0]
	}
	trimmed := bytes.TrimSpace(body)
	switch trimmed[0] {
	case '{':
		req.single = trimmed
	case '[':
		if err := json.Unmarshal(trimmed, &req.batch); err != nil {
			return req, badRequest("batch: %v", err)
		}
		if len(req.batch) < 1 || len(req.batch) > maxBatch {
			return req, badRequest("a batch holds 1 to %d messages, got %d", maxBatch, len(req.batch))
		}
		if req.dedupKey != "" {
			return req, badRequest("dedup_key applies to a single message, not a batch: send the batch to .../messages/entries with a dedup_key per entry")
		}
	default:
		return req, badRequest("send a JSON object (one message) or an array of 1 to %d message bodies (a batch); wrap other values in an array", maxBatch)
	}
	return req, nil
}

func (a *api) send(w http.ResponseWriter, r *http.Request, c *call) error {
	body, err := readBody(w, r, "application/json", maxBodyBytes, false)
	if err != nil {
		return err
	}
	req, err := decodeSend(body, r.URL.Query())
	if err != nil {
		return err
	}
	if req.single != nil {
		seq, err := a.s.queue.Send(r.Context(), c.account, c.queue, pgqueue.NewMessage{Body: req.single, Delay: req.delay, ExpiresIn: req.expires, DedupKey: req.dedupKey, Group: req.group})
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusCreated, wire.SendResult{Sequence: seq})
		return nil
	}
	ms := make([]pgqueue.NewMessage, len(req.batch))
	for i, b := range req.batch {
		ms[i] = pgqueue.NewMessage{Body: b, Delay: req.delay, ExpiresIn: req.expires, Group: req.group}
	}
	seqs, err := a.s.queue.SendBatch(r.Context(), c.account, c.queue, ms)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, wire.SendBatchResult{Sequences: seqs})
	return nil
}

// sendEntriesRequest is the body of a send of entries
// (wire.SendEntriesRequest), each field checked after decoding so that an
// error names the entry.
type sendEntriesRequest struct {
	Entries []sendEntry `json:"entries"`
}

// sendEntry is one entry (wire.SendEntry).
type sendEntry struct {
	Body             json.RawMessage `json:"body"`
	Headers          json.RawMessage `json:"headers"`
	DelaySeconds     number          `json:"delay_seconds"`
	ExpiresInSeconds number          `json:"expires_in_seconds"`
	DedupKey         json.RawMessage `json:"dedup_key"`
	Group            json.RawMessage `json:"group"`
}

// decodeSendEntries parses and checks a send of entries.
func decodeSendEntries(body []byte) ([]pgqueue.NewMessage, error) {
	var req sendEntriesRequest
	if err := checkJSON(body); err != nil {
		return nil, err
	}
	if err := decodeJSON(body, &req); err != nil {
		return nil, err
	}
	if len(req.Entries) < 1 || len(req.Entries) > maxEntries {
		return nil, badRequest(`invalid entries: give 1 to %d entries like {"body": {...}}, got %d`, maxEntries, len(req.Entries))
	}
	ms := make([]pgqueue.NewMessage, len(req.Entries))
	for i, e := range req.Entries {
		m, err := e.message(i)
		if err != nil {
			return nil, err
		}
		ms[i] = m
	}
	return ms, nil
}

// message checks entry i and converts it.
func (e sendEntry) message(i int) (pgqueue.NewMessage, error) {
	var m pgqueue.NewMessage
	if len(e.Body) == 0 || string(e.Body) == "null" {
		return m, badRequest(`entries[%d] has no body: give "body", any JSON value but null`, i)
	}
	m.Body = e.Body
	if len(e.Headers) > 0 && string(e.Headers) != "null" {
		var h map[string]string
		if e.Headers[0] != '{' || json.Unmarshal(e.Headers, &h) != nil {
			return m, badRequest(`invalid entries[%d].headers: use a JSON object of string values like {"k": "v"}`, i)
		}
		m.Headers = e.Headers
	}
	delay, err := e.DelaySeconds.get(fmt.Sprintf("entries[%d].delay_seconds", i), 0, maxDelay, 0)
	if err != nil {
		return m, err
	}
	expires, err := e.ExpiresInSeconds.get(fmt.Sprintf("entries[%d].expires_in_seconds", i), 1, maxExpires, 0)
	if err != nil {
		return m, err
	}
	m.Delay, m.ExpiresIn = time.Duration(delay)*time.Second, time.Duration(expires)*time.Second
	if len(e.DedupKey) > 0 && string(e.DedupKey) != "null" {
		var k string
		if json.Unmarshal(e.DedupKey, &k) != nil || len(k) < 1 || len(k) > 128 {
			return m, badRequest("invalid entries[%d].dedup_key: use a string of 1 to 128 characters", i)
		}
		m.DedupKey = k
	}
	if len(e.Group) > 0 && string(e.Group) != "null" {
		var g string
		if json.Unmarshal(e.Group, &g) != nil || len(g) < 1 || len(g) > 128 {
			return m, badRequest("invalid entries[%d].group: use a string of 1 to 128 characters", i)
		}
		m.Group = g
	}
	return m, nil
}

func (a *api) sendEntries(w http.ResponseWriter, r *http.Request, c *call) error {
	body, err := readBody(w, r, "application/json", maxBodyBytes, false)
	if err != nil {
		return err
	}
	ms, err := decodeSendEntries(body)
	if err != nil {
		return err
	}
	seqs, err := a.s.queue.SendBatch(r.Context(), c.account, c.queue, ms)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, wire.SendBatchResult{Sequences: seqs})
	return nil
}

// receiveRequest is the body of a receive (wire.ReceiveRequest), each
// number range-checked after decoding.
type receiveRequest struct {
	MaxMessages              number `json:"max_messages"`
	WaitSeconds              number `json:"wait_seconds"`
	VisibilityTimeoutSeconds number `json:"visibility_timeout_seconds"`
	Delete                   bool   `json:"delete"`
}

// decodeReceive parses a receive's body (nil = defaults).
func decodeReceive(body []byte) (pgqueue.ReceiveOptions, error) {
	var req receiveRequest
	var o pgqueue.ReceiveOptions
	if body != nil {
		if err := checkJSON(body); err != nil {
			return o, err
		}
		if err := decodeJSON(body, &req); err != nil {
			return o, err
		}
	}
	max, err := req.MaxMessages.get("max_messages", 1, maxBatch, 1)
	if err != nil {
		return o, err
	}
	wait, err := req.WaitSeconds.get("wait_seconds", 0, int64(pgqueue.MaxWait/time.Second), 0)
	if err != nil {
		return o, err
	}
	vt, err := req.VisibilityTimeoutSeconds.get("visibility_timeout_seconds", 0, maxDelay, -1)
	if err != nil {
		return o, err
	}
	// With delete, the messages are claimed and deleted in one statement
	// (at most once by construction).
	o.Max, o.Wait, o.Delete = int(max), time.Duration(wait)*time.Second, req.Delete
	if vt >= 0 {
		o.VisibilityTimeout = time.Duration(vt) * time.Second
		if vt == 0 {
			// The queue core reads 0 as "the queue's default"; a lease of
			// zero is the shortest it takes.
			o.VisibilityTimeout = time.Nanosecond
		}
	}
	return o, nil
}

func (a *api) receive(w http.ResponseWriter, r *http.Request, c *call) error {
	body, err := readBody(w, r, "application/json", maxBodyBytes, true)
	if err != nil {
		return err
	}
	o, err := decodeReceive(body)
	if err != nil {
		return err
	}
	if o.Delete {
		if err := c.require(ScopeDelete); err != nil {
			return err
		}
	}
	ctx := r.Context()
	if o.Wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = a.untilShutdown(ctx)
		defer cancel()
	}
	// Each look of the receive holds what it may take while it claims
	// (the queue's max_message_bytes a message), then what it took until
	// the answer is written; a look for which its account or the server
	// has no room (after roomWait) is skipped, claiming nothing, and a
	// receive whose last look was skipped answers 429. held is what the
	// receive holds in a.received (its last look's claim: a look that
	// took nothing holds nothing), given back when it ends.
	var held int64
	defer func() { a.received.add(c.account, -held) }()
	hold := func(n int64) { // holds n in place of held, within what it holds already
		a.received.add(c.account, n-held)
		held = n
	}
	var refused error
	reserve := int64(o.Max) * a.messageBytesOf(ctx, c.account, c.queue)
	// took holds what a claim took in place of what it held. Messages
	// larger than that (headers, or bodies stored before
	// max_message_bytes was lowered) must all fit, or the claim is
	// undone and the receive ends with the 429 (a long poll looking
	// again would take them again).
	took := func(ms []pgqueue.Message) error {
		var n int64
		for _, m := range ms {
			n += int64(len(m.Body) + len(m.Headers))
		}
		if n <= held {
			hold(n)
			return nil
		}
		hold(0)
		if refused = a.receiveRoom(ctx, c.account, n, 0); refused != nil {
			return refused
		}
		held = n
		return nil
	}
	if o.Delete {
		// A claim with delete is undone by not committing it.
		o.Keep = took
	}
	o.Claim = func(claim func() ([]pgqueue.Message, error)) ([]pgqueue.Message, error) {
		if refused = a.receiveRoom(ctx, c.account, reserve, roomWait); refused != nil {
			return nil, nil
		}
		held = reserve
		ms, err := claim()
		if err != nil {
			hold(0)
			return nil, err
		}
		if o.Delete {
			return ms, nil // took ran before the claim committed
		}
		if err := took(ms); err != nil {
			a.release(c.account, c.queue, ms) // leases given back as if never taken
			return nil, err
		}
		return ms, nil
	}
	ms, err := a.s.queue.Receive(ctx, c.account, c.queue, o)
	if err != nil && ctx.Err() != nil && r.Context().Err() == nil {
		// The server is shutting down: the long poll ends empty.
		ms, err, refused = nil, nil, nil
	}
	if err == nil && len(ms) == 0 && refused != nil {
		err = refused
	}
	if err != nil {
		return err
	}
	writeMessages(w, toMessages(ms), 0)
	return nil
}

// maxClaimBytes is what a receive's claim holds for each message it may
// take when its queue's max_message_bytes cannot be read: a body's most.
// minClaimBytes is the least it holds, whatever the queue's.
// roomWait is how long a claim waits for room in what receives hold.
const (
	maxClaimBytes = 1 << 20
	minClaimBytes = 64 << 10
	roomWait      = time.Second
)

// messageBytesOf is what a claim from account's queue holds for each
// message it may take while it runs: the queue's max_message_bytes (at
// least minClaimBytes), read again after limitsCacheTTL or after a change
// through this process's API. Messages can be larger (headers, Postgres's
// JSON spacing, bodies stored before the limit was lowered): what a
// claim took past what it held is checked once read.
func (a *api) messageBytesOf(ctx context.Context, account, queue string) int64 {
	key := account + "/" + queue
	if n, ok := a.messageBytes.Get(key, time.Now()); ok {
		return n
	}
	q, err := a.s.queue.GetQueue(ctx, account, queue)
	if err != nil {
		return maxClaimBytes // the receive reports the error
	}
	n := max(int64(q.Settings.MaxMessageBytes), minClaimBytes)
	a.messageBytes.Put(key, n, time.Now())
	return n
}

// release gives back the leases of messages a receive took but will not
// answer, without counting the receive (pgqueue.Client.Release); if that
// fails they come back when their leases end.
func (a *api) release(account, queue string, ms []pgqueue.Message) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := a.s.queue.Release(ctx, account, queue, pgqueue.Leases(ms)); err != nil {
		a.log.Warn().Err(err).Str("account", account).Str("queue", queue).Int("messages", len(ms)).
			Msg("giving back the leases of a receive refused for its size")
	}
}

// receiveRoom holds n bytes of account's for a receive's claim, waiting
// up to d for room, or refuses with 429 and Retry-After while the
// account's receives, or the server's, hold their most
// (Config.ReceiveBytes).
func (a *api) receiveRoom(ctx context.Context, account string, n int64, d time.Duration) error {
	switch accountFull, serverFull := a.received.take(ctx, account, n, d); {
	case accountFull:
		return tooManyRequests(1, "this account's receives may hold %d bytes of messages being claimed or not yet written to their clients on this server, and have no room for this one's: retry in a second", a.received.share)
	case serverFull:
		return tooManyRequests(1, "receives on this server may hold %d bytes of messages being claimed or not yet written to their clients, and have no room for this one's: retry in a second", a.received.limit)
	}
	return nil
}

// pageQuery reads the max_messages (1 to 100, default 10) and after (a
// sequence, default 0) of a peek or DLQ read.
func pageQuery(r *http.Request) (max int, after int64, err error) {
	m, err := queryInt(r, "max_messages", 1, 100, 10)
	if err != nil {
		return 0, 0, err
	}
	after, err = queryInt(r, "after", 0, math.MaxInt64, 0)
	return int(m), after, err
}

// holdPageRead takes one of the server's page read slots
// (Config.PageReads) for a peek or dead-letter page of account's, of
// which one account holds a quarter at most (one at least), or answers 429 with
// Retry-After at once rather than hold more pages in memory. The caller
// gives it back with the returned func once the answer is written.
func (a *api) holdPageRead(ctx context.Context, account string) (give func(), err error) {
	return a.pageReads.holdFor(ctx, account, 0,
		"this account reads %d peek or dead-letter pages at once, the most it may on this server: retry in a second",
		"%d peek and dead-letter pages are being read on this server: retry in a second")
}

func (a *api) peek(w http.ResponseWriter, r *http.Request, c *call) error {
	max, after, err := pageQuery(r)
	if err != nil {
		return err
	}
	give, err := a.holdPageRead(r.Context(), c.account)
	if err != nil {
		return err
	}
	defer give()
	ms, more, err := a.s.queue.PeekAfter(r.Context(), c.account, c.queue, after, max)
	if err != nil {
		return err
	}
	var next int64
	if more {
		next = ms[len(ms)-1].Sequence
	}
	writeMessages(w, toMessages(ms), next)
	return nil
}

func pathSequence(r *http.Request) (int64, error) {
	return integer("sequence", r.PathValue("sequence"), 1, math.MaxInt64)
}

func parseReceipt(s string) (pgqueue.Receipt, error) {
	if s == "" {
		return pgqueue.Receipt{}, nil
	}
	rc, err := pgqueue.ParseReceipt(s)
	if err != nil || rc.IsZero() {
		return rc, badRequest("invalid receipt %q: use the receipt (a UUID) a receive returned", truncate(s, 60))
	}
	return rc, nil
}

func (a *api) deleteMessage(w http.ResponseWriter, r *http.Request, c *call) error {
	seq, err := pathSequence(r)
	if err != nil {
		return err
	}
	rc, err := parseReceipt(r.URL.Query().Get("receipt"))
	if err != nil {
		return err
	}
	if err := a.s.queue.Delete(r.Context(), c.account, c.queue, seq, rc); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// visibilityRequest is the body of a visibility change
// (wire.VisibilityRequest), seconds range-checked after decoding.
type visibilityRequest struct {
	Seconds number `json:"seconds"`
	Receipt string `json:"receipt"`
}

func decodeVisibility(body []byte) (time.Duration, pgqueue.Receipt, error) {
	var req visibilityRequest
	if err := checkJSON(body); err != nil {
		return 0, pgqueue.Receipt{}, err
	}
	if err := decodeJSON(body, &req); err != nil {
		return 0, pgqueue.Receipt{}, err
	}
	if !req.Seconds.set {
		return 0, pgqueue.Receipt{}, badRequest("missing seconds: give the new visibility timeout, 0 to %d", maxDelay)
	}
	secs, err := req.Seconds.get("seconds", 0, maxDelay, 0)
	if err != nil {
		return 0, pgqueue.Receipt{}, err
	}
	rc, err := parseReceipt(req.Receipt)
	return time.Duration(secs) * time.Second, rc, err
}

func (a *api) changeVisibility(w http.ResponseWriter, r *http.Request, c *call) error {
	seq, err := pathSequence(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r, "application/json", maxBodyBytes, false)
	if err != nil {
		return err
	}
	d, rc, err := decodeVisibility(body)
	if err != nil {
		return err
	}
	if err := a.s.queue.ChangeVisibility(r.Context(), c.account, c.queue, seq, rc, d); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) purge(w http.ResponseWriter, r *http.Request, c *call) error {
	n, err := a.s.queue.Purge(r.Context(), c.account, c.queue)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.PurgeResult{Purged: n})
	return nil
}

func (a *api) receiveDLQ(w http.ResponseWriter, r *http.Request, c *call) error {
	max, after, err := pageQuery(r)
	if err != nil {
		return err
	}
	give, err := a.holdPageRead(r.Context(), c.account)
	if err != nil {
		return err
	}
	defer give()
	ds, more, err := a.s.queue.ReceiveDLQAfter(r.Context(), c.account, c.queue, after, max)
	if err != nil {
		return err
	}
	out := make([]wire.DeadLetter, len(ds))
	for i, d := range ds {
		out[i] = wire.DeadLetter{Sequence: d.Sequence, Body: rawOrNull(d.Body), Headers: rawOrNull(d.Headers),
			CreatedAt: d.CreatedAt.UTC(), ReceiveCount: d.ReceiveCount, FailedAt: d.FailedAt.UTC(),
			Reason: d.Reason, LastError: d.LastError, Group: d.Group}
	}
	var next int64
	if more {
		next = ds[len(ds)-1].Sequence
	}
	writeMessages(w, out, next)
	return nil
}

func (a *api) deleteDLQ(w http.ResponseWriter, r *http.Request, c *call) error {
	seq, err := pathSequence(r)
	if err != nil {
		return err
	}
	if err := a.s.queue.DeleteDLQ(r.Context(), c.account, c.queue, seq); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) purgeDLQ(w http.ResponseWriter, r *http.Request, c *call) error {
	n, err := a.s.queue.PurgeDLQ(r.Context(), c.account, c.queue)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.PurgeResult{Purged: n})
	return nil
}

// maxRedrive bounds one redrive's max_messages.
const maxRedrive = 1_000_000

func (a *api) redrive(w http.ResponseWriter, r *http.Request, c *call) error {
	body, err := readJSON(w, r, true)
	if err != nil {
		return err
	}
	var req redriveRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	var n int64
	if req.Sequences != nil {
		seqs, err := redriveSequences(req.Sequences, req.MaxMessages.set)
		if err != nil {
			return err
		}
		n, err = a.s.queue.RedriveSequences(r.Context(), c.account, c.queue, seqs)
		if err != nil {
			return err
		}
	} else {
		max, err := req.MaxMessages.get("max_messages", 1, maxRedrive, 0)
		if err != nil {
			return err
		}
		n, err = a.s.queue.Redrive(r.Context(), c.account, c.queue, int(max))
		if err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, wire.RedriveResult{Redriven: n})
	return nil
}

// redriveRequest is the body of a redrive (wire.RedriveRequest), each
// number range-checked after decoding.
type redriveRequest struct {
	MaxMessages number   `json:"max_messages"`
	Sequences   []number `json:"sequences"`
}

// maxRedriveSequences bounds the sequences of one selective redrive.
const maxRedriveSequences = 1000

// redriveSequences checks the sequences of a selective redrive: 1 to 1000
// distinct sequences, and no max_messages beside them.
func redriveSequences(raw []number, withMax bool) ([]int64, error) {
	if withMax {
		return nil, badRequest("give either sequences (the dead letters to redrive) or max_messages (the oldest n), not both")
	}
	if len(raw) < 1 || len(raw) > maxRedriveSequences {
		return nil, badRequest("invalid sequences: give 1 to %d sequences, got %d", maxRedriveSequences, len(raw))
	}
	seqs := make([]int64, len(raw))
	seen := make(map[int64]bool, len(raw))
	for i, n := range raw {
		if !n.set {
			return nil, badRequest("invalid sequences[%d] null: use an integer from 1 to %d", i, int64(math.MaxInt64))
		}
		v, err := integer(fmt.Sprintf("sequences[%d]", i), n.raw, 1, math.MaxInt64)
		if err != nil {
			return nil, err
		}
		if seen[v] {
			return nil, badRequest("sequence %d is given twice in sequences: give each once", v)
		}
		seen[v] = true
		seqs[i] = v
	}
	return seqs, nil
}
