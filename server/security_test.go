package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
)

// TestBadInput sends what a careless or hostile client sends: each gets
// the right 4xx with a message, never a 5xx, and nothing is half-written.
func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("q")
	q := "/" + acct + "/q"
	deep := strings.Repeat("[", 65) + strings.Repeat("]", 65)
	type badCase struct {
		name, method, path, body, ctype string
		status                          int
		code                            string
	}
	var cases []badCase
	for _, tc := range []badCase{
		{"body over 1 MiB", "POST", q + "/messages", `{"x":"` + strings.Repeat("a", 1<<20) + `"}`, "", 413, "body_too_large"},
		{"invalid JSON", "POST", q + "/messages", `{"x":`, "", 400, "invalid_json"},
		{"trailing garbage", "POST", q + "/messages", `{"x":1} {}`, "", 400, "invalid_json"},
		{"too deep", "POST", q + "/messages", `[` + deep + `]`, "", 400, "invalid_json"},
		{"invalid UTF-8", "POST", q + "/messages", "{\"x\":\"\xc3\x28\"}", "", 400, "invalid_json"},
		{"empty body", "POST", q + "/messages", "", "application/json", 400, "invalid_json"},
		{"scalar body", "POST", q + "/messages", `"hello"`, "", 400, "invalid_argument"},
		{"batch of 0", "POST", q + "/messages", `[]`, "", 400, "invalid_argument"},
		{"batch of 11", "POST", q + "/messages", `[1,2,3,4,5,6,7,8,9,10,11]`, "", 400, "invalid_argument"},
		{"batch with dedup key", "POST", q + "/messages?dedup_key=a", `[1]`, "", 400, "invalid_argument"},
		{"negative delay", "POST", q + "/messages?delay_seconds=-1", `{}`, "", 400, "invalid_argument"},
		{"fractional delay", "POST", q + "/messages?delay_seconds=1.5", `{}`, "", 400, "invalid_argument"},
		{"huge delay", "POST", q + "/messages?delay_seconds=99999999999999999999", `{}`, "", 400, "invalid_argument"},
		{"delay over max", "POST", q + "/messages?delay_seconds=43201", `{}`, "", 400, "invalid_argument"},
		{"dedup key too long", "POST", q + "/messages?dedup_key=" + strings.Repeat("k", 129), `{}`, "", 400, "invalid_argument"},
		{"wrong content type", "POST", q + "/messages", `{}`, "text/plain", 415, "unsupported_media_type"},
		{"latin1 charset", "POST", q + "/messages", `{}`, "application/json; charset=iso-8859-1", 415, "unsupported_media_type"},
		{"receive 0", "POST", q + "/messages/receive", `{"max_messages":0}`, "", 400, "invalid_argument"},
		{"receive 11", "POST", q + "/messages/receive", `{"max_messages":11}`, "", 400, "invalid_argument"},
		{"receive fractional", "POST", q + "/messages/receive", `{"max_messages":1.5}`, "", 400, "invalid_argument"},
		{"receive exponent", "POST", q + "/messages/receive", `{"max_messages":1e1}`, "", 400, "invalid_argument"},
		{"receive string", "POST", q + "/messages/receive", `{"max_messages":"5"}`, "", 400, "invalid_argument"},
		{"receive huge", "POST", q + "/messages/receive", `{"max_messages":123456789012345678901234567890}`, "", 400, "invalid_argument"},
		{"wait over 20", "POST", q + "/messages/receive", `{"wait_seconds":21}`, "", 400, "invalid_argument"},
		{"negative visibility", "POST", q + "/messages/receive", `{"visibility_timeout_seconds":-1}`, "", 400, "invalid_argument"},
		{"delete not bool", "POST", q + "/messages/receive", `{"delete":"yes"}`, "", 400, "invalid_argument"},
		{"unknown field", "POST", q + "/messages/receive", `{"max":1}`, "", 400, "invalid_argument"},
		{"receive array", "POST", q + "/messages/receive", `[]`, "", 400, "invalid_argument"},
		{"peek 101", "GET", q + "/messages?max_messages=101", "", "", 400, "invalid_argument"},
		{"peek repeated", "GET", q + "/messages?max_messages=1&max_messages=2", "", "", 400, "invalid_argument"},
		{"sequence negative", "DELETE", q + "/messages/-1", "", "", 400, "invalid_argument"},
		{"sequence fractional", "DELETE", q + "/messages/1.5", "", "", 400, "invalid_argument"},
		{"sequence huge", "DELETE", q + "/messages/99999999999999999999", "", "", 400, "invalid_argument"},
		{"bad receipt", "DELETE", q + "/messages/1?receipt=nope", "", "", 400, "invalid_argument"},
		{"visibility missing", "POST", q + "/messages/1/visibility", `{}`, "", 400, "invalid_argument"},
		{"visibility over max", "POST", q + "/messages/1/visibility", `{"seconds":43201}`, "", 400, "invalid_argument"},
		{"redrive 0", "POST", q + "/dlq/redrive", `{"max_messages":0}`, "", 400, "invalid_argument"},
		{"dlq 0", "GET", q + "/dlq?max_messages=0", "", "", 400, "invalid_argument"},
		{"name with %2e%2e", "GET", "/" + acct + "/%2e%2e/messages", "", "", 400, "invalid_argument"},
		{"name of 81", "GET", "/" + acct + "/" + strings.Repeat("a", 81) + "/messages", "", "", 400, "invalid_name"},
		{"name with space", "GET", "/" + acct + "/a%20b/messages", "", "", 400, "invalid_name"},
		{"name with encoded slash", "GET", "/" + acct + "/a%2Fb/messages", "", "", 400, "invalid_name"},
		{"empty name", "GET", "/" + acct + "//messages", "", "", 400, "invalid_argument"},
		{"unknown queue", "GET", "/" + acct + "/nope/messages", "", "", 404, "queue_not_found"},
		{"unknown route", "GET", "/" + acct + "/q/nothing", "", "", 404, "not_found"},
		{"wrong method", "PUT", q + "/messages", `{}`, "", 405, "method_not_allowed"},
		{"malformed account", "GET", "/12345/q/messages", "", "", 403, "forbidden"},
		{"create queue bad option", "POST", "/v1/accounts/" + acct + "/queues", `{"name":"x","max_receive_count":0}`, "", 400, "invalid_argument"},
		{"create queue fractional", "POST", "/v1/accounts/" + acct + "/queues", `{"name":"x","delay_seconds":0.5}`, "", 400, "invalid_argument"},
		{"create queue unknown option", "POST", "/v1/accounts/" + acct + "/queues", `{"name":"x","colour":1}`, "", 400, "invalid_argument"},
		{"create queue no name", "POST", "/v1/accounts/" + acct + "/queues", `{}`, "", 400, "invalid_argument"},
		{"create queue bad name", "POST", "/v1/accounts/" + acct + "/queues", `{"name":"../etc"}`, "", 400, "invalid_name"},
		{"create queue exists", "POST", "/v1/accounts/" + acct + "/queues", `{"name":"q"}`, "", 409, "queue_exists"},
		{"update rename", "PATCH", "/v1/accounts/" + acct + "/queues/q", `{"name":"r"}`, "", 400, "invalid_argument"},
		{"update missing queue", "PATCH", "/v1/accounts/" + acct + "/queues/none", `{}`, "", 404, "queue_not_found"},
		{"live not bool", "GET", "/v1/accounts/" + acct + "/queues?live=maybe", "", "", 400, "invalid_argument"},
		{"invocations limit", "GET", "/v1/accounts/" + acct + "/invocations?limit=0", "", "", 400, "invalid_argument"},
		{"invocations since", "GET", "/v1/accounts/" + acct + "/invocations?since=yesterday", "", "", 400, "invalid_argument"},
		{"invocations outcome", "GET", "/v1/accounts/" + acct + "/invocations?outcome=meh", "", "", 400, "invalid_argument"},
		{"unknown function", "GET", "/v1/accounts/" + acct + "/functions/nope", "", "", 404, "not_found"},
		{"trigger bad kind", "PUT", "/v1/accounts/" + acct + "/triggers/t", `{"kind":"http"}`, "", 400, "invalid_argument"},
		{"trigger bad cron", "PUT", "/v1/accounts/" + acct + "/triggers/t", `{"kind":"cron","cron_spec":"every day","function":"f"}`, "", 400, "invalid_argument"},
		{"trigger batch 0", "PUT", "/v1/accounts/" + acct + "/triggers/t", `{"kind":"queue","queue":"q","function":"f","batch_size":0}`, "", 400, "invalid_argument"},
		{"trigger bad zone", "PUT", "/v1/accounts/" + acct + "/triggers/t", `{"kind":"cron","cron_spec":"* * * * *","function":"f","timezone":"../../etc/passwd"}`, "", 400, "invalid_argument"},
		{"delete unknown trigger", "DELETE", "/v1/accounts/" + acct + "/triggers/nope", "", "", 404, "not_found"},
		{"hook bad scheme", "POST", "/v1/accounts/" + acct + "/hooks", `{"name":"h","queue":"q","verify":"md5"}`, "", 400, "invalid_argument"},
		{"hook no secret", "POST", "/v1/accounts/" + acct + "/hooks", `{"name":"h","queue":"q","verify":"github"}`, "", 400, "invalid_argument"},
		{"hook missing queue", "POST", "/v1/accounts/" + acct + "/hooks", `{"name":"h","queue":"none","verify":"none"}`, "", 404, "queue_not_found"},
		{"deploy not wasm", "POST", "/v1/accounts/" + acct + "/functions/f/versions", `{}`, "", 415, "unsupported_media_type"},
		{"alias fractional", "PUT", "/v1/accounts/" + acct + "/functions/f/aliases/live", `{"version":1.5}`, "", 400, "invalid_argument"},
	} {
		cases = append(cases, tc)
	}
	t.Run("cases", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				var body io.Reader
				if tc.body != "" || tc.ctype != "" {
					body = strings.NewReader(tc.body)
				}
				req, err := http.NewRequest(tc.method, e.ts.URL+tc.path, body)
				if err != nil {
					t.Fatal(err)
				}
				if body != nil {
					ct := tc.ctype
					if ct == "" {
						ct = "application/json"
					}
					req.Header.Set("Content-Type", ct)
				}
				sub := *e
				sub.t = t
				sub.send(tok, req).expectError(tc.status, tc.code)
			})
		}
	})
	// Nothing was half-written: no rejected send or batch left a message.
	if n := len(e.do(tok, "GET", q+"/messages?max_messages=100", "").expect(200).messages()); n != 0 {
		t.Fatalf("%d messages after rejected sends", n)
	}
}

// TestRawPaths sends paths a browser or http.Client would clean first.
func TestRawPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("q")
	for _, p := range []string{"/" + acct + "/../q/messages", "/" + acct + "/q/./messages", "//" + acct + "/q/messages"} {
		conn, err := net.Dial("tcp", e.ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n", p, tok)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		b, _ := io.ReadAll(res.Body)
		conn.Close()
		if res.StatusCode != 400 || !strings.Contains(string(b), "invalid_argument") {
			t.Errorf("GET %s: %d %s, want 400 invalid_argument", p, res.StatusCode, b)
		}
	}
}

func TestPanicIsInternalError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("q")
	e.srv.api.handle(e.srv.api.data, "GET /{account}/{queue}/boom", ScopeRecv, func(http.ResponseWriter, *http.Request, *call) error {
		panic("boom")
	})
	msg := e.do(tok, "GET", "/"+acct+"/q/boom", "").expectError(500, "internal")
	if strings.Contains(msg, "boom") {
		t.Fatalf("panic value leaked: %q", msg)
	}
	e.do(tok, "GET", "/"+acct+"/q/messages", "").expect(200)
}

func TestDatabaseDownIsUnavailable(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(context.Background(), os.Getenv(pgtest.EnvVar))
	if err != nil {
		t.Fatal(err)
	}
	pool.Close()
	_, err = pool.Exec(context.Background(), "SELECT 1")
	a := &api{log: zerolog.Nop()}
	if e := a.toAPIError(err); e.Status != 503 || e.Code != "unavailable" {
		t.Fatalf("closed pool: %+v from %v", e, err)
	}
	if e := a.toAPIError(fmt.Errorf("wrapped: %w", context.DeadlineExceeded)); e.Status != 503 {
		t.Fatalf("deadline: %+v", e)
	}
	if e := a.toAPIError(io.ErrUnexpectedEOF); e.Status != 500 || strings.Contains(e.Message, "EOF") {
		t.Fatalf("unknown error: %+v", e)
	}
}

// TestSlowHeaders holds a connection open sending headers slowly: the
// server drops it after ReadHeaderTimeout and keeps serving others.
func TestSlowHeaders(t *testing.T) {
	t.Parallel()
	srv := startListening(t, 4)

	conn, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	// Trickle a header byte every 500ms; never finish the headers.
	closed := make(chan time.Duration, 1)
	go func() {
		buf := make([]byte, 512)
		for {
			if _, err := conn.Read(buf); err != nil {
				closed <- time.Since(start)
				return
			}
		}
	}()
	trickle := time.NewTicker(500 * time.Millisecond)
	defer trickle.Stop()
	// Meanwhile another client is served.
	res, err := http.Get("http://" + srv.Addr() + "/healthz")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("healthz while a slow client waits: %v %v", res, err)
	}
	res.Body.Close()
	for {
		select {
		case d := <-closed:
			if d < 4*time.Second {
				t.Fatalf("connection closed after %v, before the 5s header timeout", d)
			}
			return
		case <-trickle.C:
			_, _ = io.WriteString(conn, "X")
		case <-time.After(15 * time.Second):
			t.Fatal("slow client still connected after 15s: no header timeout")
		}
	}
}

// TestStopEndsLongPolls: a server stopping answers its long polls at once
// (empty) instead of making Stop wait for them.
func TestStopEndsLongPolls(t *testing.T) {
	t.Parallel()
	srv := startListening(t, 4)
	ctx := context.Background()
	id, secret, err := srv.CreateKey(ctx, "000000000001", []string{ScopeAllMQ}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + srv.Addr() + "/000000000001/q/messages"
	post := func(path, body string) (int, string) {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+id+":"+secret)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if _, err := srv.queue.CreateQueue(ctx, "000000000001", "q", pgqueue.Settings{}); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		code int
		body string
	}
	done := make(chan answer, 1)
	go func() {
		code, body := post("/receive", `{"wait_seconds":20}`)
		done <- answer{code, body}
	}()
	time.Sleep(500 * time.Millisecond) // let the long poll start
	// Without the long poll ending, Shutdown would time out and Stop fail.
	if err := srv.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if a := <-done; a.code != 200 || !strings.Contains(a.body, `"messages":[]`) {
		t.Fatalf("long poll answered %d %s, want 200 with no messages", a.code, a.body)
	}
}
