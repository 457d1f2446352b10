package server

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawPost opens a connection and sends a POST to path whose headers
// announce n body bytes but only part of the body, leaving it open.
func rawPost(t *testing.T, addr, path string, n int, part string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, n, part)
	return conn
}

// readStatus reads the response on conn within d, 0 when none came.
func readStatus(conn net.Conn, d time.Duration) (int, http.Header) {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, nil
	}
	res.Body.Close()
	return res.StatusCode, res.Header
}

// TestWebhookUnknownHookNotRead: a delivery to an unknown hook is refused
// before its body is read, so it holds no memory (nor waits for a body
// that never comes).
func TestWebhookUnknownHookNotRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, _ := e.admin("q")
	conn := rawPost(t, e.ts.Listener.Addr().String(), "/hooks/"+acct+"/nope", 1<<20, strings.Repeat("x", 100))
	if code, _ := readStatus(conn, 3*time.Second); code != 404 {
		t.Fatalf("unknown hook with a pending 1 MiB body: status %d, want 404 before the body is read", code)
	}
}

// TestWebhookReadSlots: at most Config.WebhookReads bodies are read at
// once; the next delivery gets 503 with Retry-After, and once a slot is
// free deliveries go through again.
func TestWebhookReadSlots(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("q")
	e.do(tok, "POST", "/v1/accounts/"+acct+"/hooks", `{"name":"h","queue":"q","verify":"none"}`).expect(201)
	slots := e.srv.api.webhookReads
	for range cap(slots) - 1 {
		slots <- struct{}{}
	}
	defer func() {
		for range cap(slots) - 1 {
			<-slots
		}
	}()
	// A slow sender takes the last slot.
	slow := rawPost(t, e.ts.Listener.Addr().String(), "/hooks/"+acct+"/h", 1000, "{")
	deadline := time.Now().Add(5 * time.Second)
	for len(slots) < cap(slots) {
		if time.Now().After(deadline) {
			t.Fatal("the slow delivery never took a read slot")
		}
		time.Sleep(10 * time.Millisecond)
	}
	res := e.hook(acct, "h", `{}`, nil)
	res.expectError(503, "unavailable")
	if res.header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	slow.Close()
	for len(slots) == cap(slots) {
		time.Sleep(10 * time.Millisecond)
	}
	e.hook(acct, "h", `{}`, nil).expect(202)
}
