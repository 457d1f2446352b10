package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
)

// At most Config.PageReads peek and dead-letter pages are read at once,
// a quarter of them by one account: beyond, 429 with Retry-After and a
// message naming the bound; a slot given back is taken again.
func TestPageReadsAtOnceAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(c *Config) { c.PageReads = 8 })
	a := e.srv.api
	var gives []func()
	for i := range 2 {
		give, err := a.holdPageRead(t.Context(), "one")
		if err != nil {
			t.Fatalf("page read %d of an account with a share of 2: %v", i+1, err)
		}
		gives = append(gives, give)
	}
	if _, err := a.holdPageRead(t.Context(), "one"); err == nil || !strings.Contains(err.Error(), "this account reads 2 peek or dead-letter pages at once") {
		t.Fatalf("third page read of one account: %v, want refused by its share", err)
	}
	for _, acct := range []string{"two", "two", "three", "three", "four", "four"} {
		give, err := a.holdPageRead(t.Context(), acct)
		if err != nil {
			t.Fatalf("page read of account %s: %v", acct, err)
		}
		gives = append(gives, give)
	}
	_, err := a.holdPageRead(t.Context(), "five")
	if e, ok := err.(*apiError); !ok || e.Status != 429 || e.RetryAfter < 1 || !strings.Contains(e.Message, "8 peek and dead-letter pages are being read on this server") {
		t.Fatalf("page read past the server's 8: %v, want 429 with Retry-After", err)
	}
	gives[0]()
	give, err := a.holdPageRead(t.Context(), "one")
	if err != nil {
		t.Fatalf("page read after one was given back: %v", err)
	}
	give()
	for _, g := range gives[1:] {
		g()
	}
	if len(a.pageReads.tokens) != 0 || len(a.pageReads.shares.held) != 0 {
		t.Fatalf("after every read was given back: %d slots and shares %v held", len(a.pageReads.tokens), a.pageReads.shares.held)
	}
}

// At most maxStatsReads reads counting queues' messages (a queue's
// stats, a page's live counts, an app's) run at once, a quarter of them by
// one account: a read beyond waits statsWait for a slot, then gets 429
// with Retry-After naming the bound, while a list without counts and
// another account's stats are answered; a read waiting gets the slot
// given back.
func TestStatsReadsAtOnceAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("q")
	other, otherTok := e.admin("q")
	var gives []func()
	for i := range 2 {
		give, err := e.srv.api.holdStatsRead(t.Context(), acct)
		if err != nil {
			t.Fatalf("stats read %d of an account with a share of 2: %v", i+1, err)
		}
		gives = append(gives, give)
	}
	base := "/v1/accounts/" + acct + "/queues"
	for _, path := range []string{base + "/q", base + "?live=true"} {
		start := time.Now()
		res := e.do(tok, "GET", path, "")
		if msg := res.expectError(429, "too_many_requests"); !strings.Contains(msg, "this account counts the messages of its queues (stats, app plans) 2 times at once") || res.header.Get("Retry-After") != "1" {
			t.Fatalf("GET %s beyond the account's share: %q, Retry-After %q", path, msg, res.header.Get("Retry-After"))
		}
		if waited := time.Since(start); waited < statsWait {
			t.Fatalf("GET %s refused after %v, before its %v of waiting for a slot", path, waited, statsWait)
		}
	}
	e.do(tok, "GET", base, "").expect(200)
	e.do(otherTok, "GET", "/v1/accounts/"+other+"/queues/q", "").expect(200)
	for _, acct := range []string{"a", "a", "b", "b", "c", "c"} {
		give, err := e.srv.api.holdStatsRead(t.Context(), acct)
		if err != nil {
			t.Fatalf("stats read of account %s: %v", acct, err)
		}
		gives = append(gives, give)
	}
	if msg := e.do(otherTok, "GET", "/v1/accounts/"+other+"/queues/q", "").expectError(429, "too_many_requests"); !strings.Contains(msg, "the messages of queues are being counted (stats, app plans) 8 times at once on this server") {
		t.Fatalf("stats read past the server's 8: %q", msg)
	}
	// One given back while a read waits: the read gets it.
	time.AfterFunc(100*time.Millisecond, gives[0])
	e.do(tok, "GET", base+"/q", "").expect(200)
	for _, give := range gives[1:] {
		give()
	}
	e.do(tok, "GET", base+"?live=true", "").expect(200)
	if len(e.srv.api.statsReads.tokens) != 0 {
		t.Fatalf("%d stats read slots held after every read ended", len(e.srv.api.statsReads.tokens))
	}
}

// A client that does not read its answer holds it, and its page read
// slot, for Config.AnswerWriteTimeout, no longer: meanwhile its account's
// next peek or DLQ read beyond its share gets 429 with Retry-After,
// another account's is answered.
func TestUnreadAnswersAreCutOff(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(c *Config) { c.PageReads, c.AnswerWriteTimeout = 4, 2*time.Second })
	acct, tok := e.admin("big")
	other, otherTok := e.admin("small")
	// 8 MiB of messages: a whole page, more than the sockets buffer.
	sendLarge(t, e, acct, "big", 40, 200<<10)
	newStalledClients(t, e).send(fmt.Sprintf("GET /%s/big/messages?max_messages=100 HTTP/1.1\r\nHost: sluice\r\nAuthorization: Bearer %s\r\n\r\n", acct, tok))
	// The deadline only catches a server that never takes the request.
	waitFor(t, time.Minute, "the unread peek to hold a page read slot", func() bool { return len(e.srv.api.pageReads.tokens) == 1 })
	for _, path := range []string{"/messages?max_messages=1", "/dlq"} {
		res := e.do(tok, "GET", "/"+acct+"/big"+path, "")
		if msg := res.expectError(429, "too_many_requests"); !strings.Contains(msg, "this account reads 1 peek or dead-letter pages at once") || res.header.Get("Retry-After") != "1" {
			t.Fatalf("GET %s beyond the account's share: %q, Retry-After %q", path, msg, res.header.Get("Retry-After"))
		}
	}
	e.do(otherTok, "GET", "/"+other+"/small/messages", "").expect(200)
	e.do(otherTok, "GET", "/"+other+"/small/dlq", "").expect(200)
	// Cut off after its 2 s; the bound only catches an answer never cut.
	waitFor(t, time.Minute, "the unread answer to be cut off", func() bool { return len(e.srv.api.pageReads.tokens) == 0 })
	e.do(tok, "GET", "/"+acct+"/big/messages?max_messages=1", "").expect(200)
}

// Received messages held until their answers are written are bounded by
// Config.ReceiveBytes, a quarter of it by one account: while a client
// that does not read its answer holds its account's share, that
// account's receives and long polls get 429 with Retry-After after
// waiting a second for room, and claim nothing (the message they would
// have taken is still unleased); another account's are answered; once the
// client goes away, receives go on.
func TestReceivedBytesAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(c *Config) { c.ReceiveBytes = 4 << 20 })
	acct, tok := e.admin("big")
	other, otherTok := e.admin("small")
	// 2 MB of messages in one receive (a claim holding 2.5 MiB while it
	// runs): over the account's 1 MiB share, and more than the sockets
	// buffer.
	sendLarge(t, e, acct, "big", 10, 200<<10)
	conn := newStalledClients(t, e).send(receiveText(acct, tok, `{"max_messages":10}`))
	// The deadline only catches a server that never takes the request.
	waitFor(t, time.Minute, "the unread receive to hold its messages", func() bool { return e.srv.api.received.of(acct) >= 10*200<<10 })
	var sent struct{ Sequence int64 }
	e.do(tok, "POST", "/"+acct+"/big/messages", `{"ready":true}`).expect(201).decode(&sent)
	for _, req := range []string{`{}`, `{"wait_seconds":1}`, `{"delete":true}`} {
		res := e.do(tok, "POST", "/"+acct+"/big/messages/receive", req)
		if msg := res.expectError(429, "too_many_requests"); !strings.Contains(msg, "this account's receives may hold 1048576 bytes of messages being claimed or not yet written to their clients on this server, and have no room for this one's") || res.header.Get("Retry-After") != "1" {
			t.Fatalf("receive %s beyond the account's share: %q, Retry-After %q", req, msg, res.header.Get("Retry-After"))
		}
	}
	e.do(otherTok, "POST", "/"+other+"/small/messages", `{"n":1}`).expect(201)
	if got := e.do(otherTok, "POST", "/"+other+"/small/messages/receive", `{}`).expect(200).messages(); len(got) != 1 {
		t.Fatalf("another account's receive: %+v, want its message", got)
	}
	conn.Close()
	waitFor(t, time.Minute, "the unread answer to be given up", func() bool { return e.srv.api.received.of(acct) == 0 })
	got := e.do(tok, "POST", "/"+acct+"/big/messages/receive", `{"max_messages":10,"visibility_timeout_seconds":60}`).expect(200).messages()
	if len(got) != 1 || got[0].Sequence != sent.Sequence || got[0].ReceiveCount != 1 {
		t.Fatalf("receive after the cut-off: %+v, want message %d at its first receive (the refused ones took nothing)", got, sent.Sequence)
	}
	// A claim holds the queue's max_message_bytes a message while it
	// runs, a change through the API seen at once; 1 MiB, a body's most,
	// for a queue it cannot read.
	if n := e.srv.api.messageBytesOf(t.Context(), acct, "big"); n != 256<<10 {
		t.Fatalf("a claim holds %d bytes a message of a queue of 256 KiB messages", n)
	}
	e.do(tok, "PATCH", "/v1/accounts/"+acct+"/queues/big", `{"max_message_bytes":1048576}`).expect(200)
	if n := e.srv.api.messageBytesOf(t.Context(), acct, "big"); n != 1<<20 {
		t.Fatalf("a claim holds %d bytes a message after max_message_bytes was raised to 1 MiB", n)
	}
	if n := e.srv.api.messageBytesOf(t.Context(), acct, "nope"); n != maxClaimBytes {
		t.Fatalf("a claim holds %d bytes a message of a missing queue, want %d", n, maxClaimBytes)
	}
}

// A claim that took more than it held (here headers, past a queue's
// max_message_bytes, which bounds bodies) must find room for all it took:
// a receive for which it does not gives its leases back uncounted and
// answers 429; one for which it does is answered. A receive with delete
// is refused alike, its deletion not committed.
func TestReceivedBytesPastTheClaimsHold(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(c *Config) { c.ReceiveBytes = 4 << 20 })
	acct, tok := e.admin("")
	e.do(tok, "POST", "/v1/accounts/"+acct+"/queues", `{"name":"big","max_message_bytes":1024}`).expect(201)
	headers := json.RawMessage(`{"h":"` + strings.Repeat("x", 200<<10) + `"}`)
	ms := make([]pgqueue.NewMessage, 10)
	for i := range ms {
		ms[i] = pgqueue.NewMessage{Body: json.RawMessage(`1`), Headers: headers}
	}
	if _, err := e.srv.queue.SendBatch(t.Context(), acct, "big", ms); err != nil {
		t.Fatal(err)
	}
	// A client that does not read holds 3 of them, 600 KiB of the
	// account's 1 MiB share (its claim held 192 KiB: 64 KiB a message,
	// the least a claim holds; the rest fitted).
	newStalledClients(t, e).send(receiveText(acct, tok, `{"max_messages":3}`))
	waitFor(t, time.Minute, "the unread receive to hold its messages", func() bool { return e.srv.api.received.of(acct) >= 600<<10 })
	held := e.srv.api.received.of(acct)
	recv := "/" + acct + "/big/messages/receive"
	// 5 more claimed holding 320 KiB, 1,000 KiB taken: past the share.
	if msg := e.do(tok, "POST", recv, `{"max_messages":5}`).expectError(429, "too_many_requests"); !strings.Contains(msg, "this account's receives may hold 1048576 bytes") {
		t.Fatalf("receive of 1,000 KiB of headers beside 600 held: %q", msg)
	}
	if n := e.srv.api.received.of(acct); n != held {
		t.Fatalf("after a receive refused for its size the account holds %d bytes, want the %d it held before", n, held)
	}
	peeked, _, err := e.srv.queue.PeekAfter(t.Context(), acct, "big", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var received int
	for _, m := range peeked {
		received += m.ReceiveCount
	}
	if len(peeked) != 7 || received != 0 {
		t.Fatalf("after the refused receive: %d messages ready, received %d times in all; want the 7 the stalled client does not hold, never received", len(peeked), received)
	}
	if got := e.do(tok, "POST", recv, `{"max_messages":1}`).expect(200).messages(); len(got) != 1 {
		t.Fatalf("receive of one message of 200 KiB headers beside 600 KiB held: %+v", got)
	}
	// A receive with delete is refused the same way before its deletion
	// commits: it deletes nothing.
	if msg := e.do(tok, "POST", recv, `{"max_messages":5,"delete":true}`).expectError(429, "too_many_requests"); !strings.Contains(msg, "this account's receives may hold 1048576 bytes") {
		t.Fatalf("receive with delete of 1,000 KiB of headers beside 600 held: %q", msg)
	}
	if n := e.srv.api.received.of(acct); n != held {
		t.Fatalf("after a receive with delete refused for its size the account holds %d bytes, want the %d it held before", n, held)
	}
	ready := func() int {
		t.Helper()
		peeked, _, err := e.srv.queue.PeekAfter(t.Context(), acct, "big", 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(peeked)
	}
	if n := ready(); n != 6 {
		t.Fatalf("after the refused receive with delete: %d messages ready, want the 6 no receive holds", n)
	}
	if got := e.do(tok, "POST", recv, `{"max_messages":2,"delete":true}`).expect(200).messages(); len(got) != 2 {
		t.Fatalf("receive with delete of 400 KiB beside 600 held: %d messages, want 2", len(got))
	}
	if n := ready(); n != 4 {
		t.Fatalf("after a receive with delete of 2: %d messages ready, want 4", n)
	}
}

// heldBytes refuses an account past its quarter of the bound and
// everyone past the bound, but never one holding nothing yet (a claim
// larger than the bound runs alone), and forgets what was given back.
func TestHeldBytesBounds(t *testing.T) {
	h := newHeldBytes(100)
	check := func(what, account string, n int64, wantAccountFull, wantServerFull bool) {
		t.Helper()
		if accountFull, serverFull := h.take(t.Context(), account, n, 0); accountFull != wantAccountFull || serverFull != wantServerFull {
			t.Fatalf("%s: %s takes %d with %d held (%v): account full %v, server full %v; want %v, %v",
				what, account, n, h.total, h.byAccount, accountFull, serverFull, wantAccountFull, wantServerFull)
		}
	}
	check("a claim larger than the share, nothing held", "a", 60, false, false)
	check("a second claim past the share", "a", 1, true, false)
	check("another account within its share", "b", 25, false, false)
	check("past the server's bound", "c", 16, false, true)
	check("up to the server's bound", "c", 15, false, false)
	h.add("a", -60)
	h.add("b", -25)
	h.add("c", -15)
	if h.total != 0 || len(h.byAccount) != 0 {
		t.Fatalf("after everything was given back: %d bytes, %v", h.total, h.byAccount)
	}
	check("a claim larger than the bound, nothing held", "d", 1000, false, false)
	check("anyone beside it", "e", 1, false, true)
	// A take waits for room given back within its wait.
	go func() {
		time.Sleep(50 * time.Millisecond)
		h.add("d", -1000)
	}()
	if accountFull, serverFull := h.take(t.Context(), "e", 1, time.Minute); accountFull || serverFull || h.of("e") != 1 {
		t.Fatalf("a take waiting for room given back: account full %v, server full %v, %d held", accountFull, serverFull, h.of("e"))
	}
}

// of is what account holds.
func (h *heldBytes) of(account string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byAccount[account]
}

// sendLarge sends n messages of size bytes (a JSON string) to account's
// queue, in batches of 10.
func sendLarge(tb testing.TB, e *env, account, queue string, n, size int) {
	tb.Helper()
	body := json.RawMessage(`"` + strings.Repeat("x", size-2) + `"`)
	for sent := 0; sent < n; sent += 10 {
		ms := make([]pgqueue.NewMessage, min(10, n-sent))
		for i := range ms {
			ms[i] = pgqueue.NewMessage{Body: body}
		}
		if _, err := e.srv.queue.SendBatch(tb.Context(), account, queue, ms); err != nil {
			tb.Fatal(err)
		}
	}
}

// receiveText is the text of an HTTP/1.1 receive of account's queue
// "big" with body.
func receiveText(account, token, body string) string {
	return fmt.Sprintf("POST /%s/big/messages/receive HTTP/1.1\r\nHost: sluice\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		account, token, len(body), body)
}

// stalledClients are clients that do not read their answers, of a
// server of e's handler: small buffers at both ends, whatever the host's
// defaults, so that an answer stays in the server's write.
type stalledClients struct {
	tb   testing.TB
	addr string
}

func newStalledClients(tb testing.TB, e *env) *stalledClients {
	ts := httptest.NewUnstartedServer(e.srv.Handler())
	ts.Listener = smallSendBuffers{ts.Listener}
	ts.Start()
	tb.Cleanup(ts.Close)
	return &stalledClients{tb: tb, addr: ts.Listener.Addr().String()}
}

// send writes request (an HTTP/1.1 request's text) on a new connection,
// closed when the test ends, and reads nothing.
func (s *stalledClients) send(request string) net.Conn {
	s.tb.Helper()
	conn, err := smallReceiveBuffers.DialContext(s.tb.Context(), "tcp", s.addr)
	if err != nil {
		s.tb.Fatal(err)
	}
	s.tb.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, request); err != nil {
		s.tb.Fatal(err)
	}
	return conn
}

// smallSendBuffers gives every connection it accepts a small send buffer.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// waitFor polls cond until it holds, failing the test with what was
// awaited once limit has passed.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", limit, what)
		}
	}
}

// smallReceiveBuffers dials with a small receive buffer.
var smallReceiveBuffers = &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) }); err != nil {
		return err
	}
	return serr
}}
