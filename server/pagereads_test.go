package server

import (
	"encoding/json"
	"fmt"
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
		give, err := a.holdPageRead("one")
		if err != nil {
			t.Fatalf("page read %d of an account with a share of 2: %v", i+1, err)
		}
		gives = append(gives, give)
	}
	if _, err := a.holdPageRead("one"); err == nil || !strings.Contains(err.Error(), "this account reads 2 peek or dead-letter pages at once") {
		t.Fatalf("third page read of one account: %v, want refused by its share", err)
	}
	for _, acct := range []string{"two", "two", "three", "three", "four", "four"} {
		give, err := a.holdPageRead(acct)
		if err != nil {
			t.Fatalf("page read of account %s: %v", acct, err)
		}
		gives = append(gives, give)
	}
	_, err := a.holdPageRead("five")
	if e, ok := err.(*apiError); !ok || e.Status != 429 || e.RetryAfter < 1 || !strings.Contains(e.Message, "8 peek and dead-letter pages are being read on this server") {
		t.Fatalf("page read past the server's 8: %v, want 429 with Retry-After", err)
	}
	gives[0]()
	give, err := a.holdPageRead("one")
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
	body := json.RawMessage(`"` + strings.Repeat("x", 200<<10) + `"`)
	for range 4 {
		ms := make([]pgqueue.NewMessage, 10)
		for i := range ms {
			ms[i] = pgqueue.NewMessage{Body: body}
		}
		if _, err := e.srv.queue.SendBatch(t.Context(), acct, "big", ms); err != nil {
			t.Fatal(err)
		}
	}
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) }); err != nil {
			return err
		}
		return serr
	}}
	// Small buffers at both ends, whatever the host's defaults: the
	// answer stays in the server's write.
	ts := httptest.NewUnstartedServer(e.srv.Handler())
	ts.Listener = smallSendBuffers{ts.Listener}
	ts.Start()
	defer ts.Close()
	conn, err := d.DialContext(t.Context(), "tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /%s/big/messages?max_messages=100 HTTP/1.1\r\nHost: sluice\r\nAuthorization: Bearer %s\r\n\r\n", acct, tok)
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
