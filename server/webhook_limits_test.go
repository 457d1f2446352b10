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
	slots := e.srv.api.webhookReads.tokens
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

// TestWebhookReadShares: one client address holds an eighth of the
// webhook read slots at most, and deliveries to one account's hooks a
// quarter, so that neither blocks the others' deliveries; and a body that
// trickles holds its slot webhookBodyTime at most.
func TestWebhookReadShares(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	slots := cap(e.srv.api.webhookReads.tokens)
	a, aTok := e.admin("q")
	b, bTok := e.admin("q")
	for _, c := range [][2]string{{a, aTok}, {b, bTok}} {
		e.do(c[1], "POST", "/v1/accounts/"+c[0]+"/hooks", `{"name":"h","queue":"q","verify":"none"}`).expect(201)
	}
	shares := &e.srv.api.webhookReads.shares
	held := func(key string) int {
		shares.mu.Lock()
		defer shares.mu.Unlock()
		return shares.held[key]
	}

	// Deliveries to account a's hooks hold their quarter: a's next is
	// refused, b's is read.
	for range slots / 4 {
		shares.take([]string{"account " + a}, []int{slots / 4})
	}
	if msg := e.hook(a, "h", `{}`, nil).expectError(503, "unavailable"); !strings.Contains(msg, "for this account") {
		t.Errorf("a delivery past its account's share: %q", msg)
	}
	e.hook(b, "h", `{}`, nil).expect(202)
	for range slots / 4 {
		shares.give([]string{"account " + a})
	}

	// One address trickling bodies holds its eighth.
	var slow []net.Conn
	for range slots / 8 {
		slow = append(slow, rawPost(t, e.ts.Listener.Addr().String(), "/hooks/"+b+"/h", 1000, "{"))
	}
	deadline := time.Now().Add(time.Minute)
	for held("address 127.0.0.1") < slots/8 {
		if time.Now().After(deadline) {
			t.Fatalf("the slow deliveries hold %d shares of their address, want %d", held("address 127.0.0.1"), slots/8)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if msg := e.hook(a, "h", `{}`, nil).expectError(503, "unavailable"); !strings.Contains(msg, "for this address") {
		t.Errorf("a delivery past its address's share: %q", msg)
	}
	// A trickled body is cut after webhookBodyTime, freeing its share.
	if status, _ := readStatus(slow[0], webhookBodyTime+30*time.Second); status != 400 {
		t.Errorf("a body trickled past %s: status %d, want 400", webhookBodyTime, status)
	}
	for _, c := range slow[1:] {
		c.Close()
	}
	for held("address 127.0.0.1") > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the slow deliveries' shares were never given back")
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.hook(a, "h", `{}`, nil).expect(202)
}
