package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// These tests cover client-side logic against a fake HTTP server: how
// requests are built, how responses and errors are decoded, and what the
// client refuses before sending. The API itself is tested against a real
// server in client_test.go.

// seen is one request the fake server received.
type seen struct {
	method, path, rawPath, query, auth, contentType, ua string
	body                                                string
}

// fake serves status and body for every request and records them.
type fake struct {
	mu     sync.Mutex
	reqs   []seen
	status int
	body   string
	ctype  string
	header http.Header // more response headers
}

func newFake(t *testing.T, status int, body string, opts ...Option) (*Client, *fake) {
	t.Helper()
	f := &fake{status: status, body: body, ctype: "application/json"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, seen{r.Method, r.URL.Path, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Authorization"),
			r.Header.Get("Content-Type"), r.Header.Get("User-Agent"), string(b)})
		f.mu.Unlock()
		w.Header().Set("Content-Type", f.ctype)
		for k, v := range f.header {
			w.Header()[k] = v
		}
		w.WriteHeader(f.status)
		_, _ = io.WriteString(w, f.body)
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL+"/api/", "kid", "s3cret", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c, f
}

func (f *fake) only(t *testing.T) seen {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) != 1 {
		t.Fatalf("got %d requests, want 1: %+v", len(f.reqs), f.reqs)
	}
	return f.reqs[0]
}

func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

func TestRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const acct = "000000000042"
	tests := []struct {
		name                       string
		status                     int
		resp                       string
		call                       func(c *Client) error
		method, path, query, ctype string
		body                       string
	}{
		{"send object", 201, `{"sequence":42}`, func(c *Client) error {
			seq, err := c.MQ.Send(ctx, "orders", map[string]int{"id": 1}, SendOptions{DelaySeconds: 5, DedupKey: "k 1"})
			if err == nil && seq != 42 {
				return errors.New("wrong sequence")
			}
			return err
		}, "POST", "/api/" + acct + "/orders/messages", "dedup_key=k+1&delay_seconds=5", "application/json", `{"id":1}`},
		{"send raw array as one message", 201, `{"sequences":[7]}`, func(c *Client) error {
			seq, err := c.MQ.Send(ctx, "orders", json.RawMessage(` [1, 2] `))
			if err == nil && seq != 7 {
				return errors.New("wrong sequence")
			}
			return err
		}, "POST", "/api/" + acct + "/orders/messages", "", "application/json", `[[1,2]]`},
		{"send batch", 201, `{"sequences":[1,2]}`, func(c *Client) error {
			seqs, err := c.MQ.SendBatch(ctx, "orders", []any{[]byte(`{"a":1}`), "two"})
			if err == nil && len(seqs) != 2 {
				return errors.New("wrong sequences")
			}
			return err
		}, "POST", "/api/" + acct + "/orders/messages", "", "application/json", `[{"a":1},"two"]`},
		{"send with ttl", 201, `{"sequence":43}`, func(c *Client) error {
			_, err := c.MQ.Send(ctx, "orders", map[string]int{"id": 1}, SendOptions{TTLSeconds: 60})
			return err
		}, "POST", "/api/" + acct + "/orders/messages", "expires_in_seconds=60", "application/json", `{"id":1}`},
		{"send with headers goes as an entry", 201, `{"sequences":[44]}`, func(c *Client) error {
			seq, err := c.MQ.Send(ctx, "orders", "text", SendOptions{Headers: map[string]string{"k": "v"}, DelaySeconds: 1, TTLSeconds: 9, DedupKey: "d"})
			if err == nil && seq != 44 {
				return errors.New("wrong sequence")
			}
			return err
		}, "POST", "/api/" + acct + "/orders/messages/entries", "", "application/json",
			`{"entries":[{"body":"text","headers":{"k":"v"},"delay_seconds":1,"expires_in_seconds":9,"dedup_key":"d"}]}`},
		{"send batch with headers", 201, `{"sequences":[1,2]}`, func(c *Client) error {
			_, err := c.MQ.SendBatch(ctx, "orders", []any{1, 2}, SendOptions{Headers: map[string]string{}})
			return err
		}, "POST", "/api/" + acct + "/orders/messages/entries", "", "application/json", `{"entries":[{"body":1},{"body":2}]}`},
		{"send entries", 201, `{"sequences":[5,6]}`, func(c *Client) error {
			seqs, err := c.MQ.SendEntries(ctx, "orders", []SendEntry{{Body: json.RawMessage(`{"a":1}`), Headers: map[string]string{"k": "v"}},
				{Body: json.RawMessage(`2`), DelaySeconds: 3, ExpiresInSeconds: 4, DedupKey: "x"}})
			if err == nil && (len(seqs) != 2 || seqs[1] != 6) {
				return errors.New("wrong sequences")
			}
			return err
		}, "POST", "/api/" + acct + "/orders/messages/entries", "", "application/json",
			`{"entries":[{"body":{"a":1},"headers":{"k":"v"}},{"body":2,"delay_seconds":3,"expires_in_seconds":4,"dedup_key":"x"}]}`},
		{"receive", 200, `{"messages":[{"sequence":3,"body":{"x":1},"receipt":"r"}]}`, func(c *Client) error {
			m, err := c.MQ.Receive(ctx, "orders", ReceiveOptions{MaxMessages: 10, WaitSeconds: 5, Delete: true})
			if err == nil && (len(m) != 1 || m[0].Sequence != 3 || string(m[0].Body) != `{"x":1}` || m[0].Receipt != "r") {
				return errors.New("wrong messages")
			}
			return err
		}, "POST", "/api/" + acct + "/orders/messages/receive", "", "application/json", `{"delete":true,"max_messages":10,"wait_seconds":5}`},
		{"receive defaults", 200, `{"messages":[]}`, func(c *Client) error {
			_, err := c.MQ.Receive(ctx, "orders", ReceiveOptions{VisibilityTimeoutSeconds: 60})
			return err
		}, "POST", "/api/" + acct + "/orders/messages/receive", "", "application/json", `{"max_messages":1,"visibility_timeout_seconds":60}`},
		{"delete fenced", 204, "", func(c *Client) error {
			return c.MQ.Delete(ctx, "orders", 9, "abc-def")
		}, "DELETE", "/api/" + acct + "/orders/messages/9", "receipt=abc-def", "", ""},
		{"change visibility", 204, "", func(c *Client) error {
			return c.MQ.ChangeVisibility(ctx, "orders", 9, 0, "")
		}, "POST", "/api/" + acct + "/orders/messages/9/visibility", "", "application/json", `{"seconds":0}`},
		{"purge", 200, `{"purged":17}`, func(c *Client) error {
			n, err := c.MQ.Purge(ctx, "orders")
			if err == nil && n != 17 {
				return errors.New("wrong count")
			}
			return err
		}, "DELETE", "/api/" + acct + "/orders/messages", "", "", ""},
		{"peek", 200, `{"messages":[]}`, func(c *Client) error {
			_, err := c.MQ.Peek(ctx, "orders", 100)
			return err
		}, "GET", "/api/" + acct + "/orders/messages", "max_messages=100", "", ""},
		{"peek after", 200, `{"messages":[]}`, func(c *Client) error {
			_, err := c.MQ.Peek(ctx, "orders", 0, PageOptions{After: 1234})
			return err
		}, "GET", "/api/" + acct + "/orders/messages", "after=1234", "", ""},
		{"receive dlq after", 200, `{"messages":[]}`, func(c *Client) error {
			_, err := c.MQ.ReceiveDLQ(ctx, "orders", 100, PageOptions{After: 9})
			return err
		}, "GET", "/api/" + acct + "/orders/dlq", "after=9&max_messages=100", "", ""},
		{"redrive sequences", 200, `{"redriven":1}`, func(c *Client) error {
			n, err := c.MQ.RedriveSequences(ctx, "orders", []int64{12, 15})
			if err == nil && n != 1 {
				return errors.New("wrong count")
			}
			return err
		}, "POST", "/api/" + acct + "/orders/dlq/redrive", "", "application/json", `{"sequences":[12,15]}`},
		{"receive dlq", 200, `{"messages":[{"sequence":1,"reason":"max_receive_count"}]}`, func(c *Client) error {
			d, err := c.MQ.ReceiveDLQ(ctx, "orders", 0)
			if err == nil && (len(d) != 1 || d[0].Reason != "max_receive_count") {
				return errors.New("wrong dead letters")
			}
			return err
		}, "GET", "/api/" + acct + "/orders/dlq", "", "", ""},
		{"redrive", 200, `{"redriven":3}`, func(c *Client) error {
			n, err := c.MQ.Redrive(ctx, "orders", 5)
			if err == nil && n != 3 {
				return errors.New("wrong count")
			}
			return err
		}, "POST", "/api/" + acct + "/orders/dlq/redrive", "", "application/json", `{"max_messages":5}`},
		{"list queues live, bare array", 200, `[{"name":"a","stats":{"ready":2}}]`, func(c *Client) error {
			qs, err := c.Queues.List(ctx, ListQueuesOptions{Live: true})
			if err == nil && (len(qs) != 1 || qs[0].Stats == nil || qs[0].Stats.Ready != 2) {
				return errors.New("wrong queues")
			}
			return err
		}, "GET", "/api/v1/accounts/" + acct + "/queues", "live=true", "", ""},
		{"create queue", 201, `{"name":"orders","max_receive_count":3}`, func(c *Client) error {
			q, err := c.Queues.Create(ctx, "orders", QueueSettings{MaxReceiveCount: Int(3), DelaySeconds: Int(0)})
			if err == nil && q.MaxReceiveCount != 3 {
				return errors.New("wrong queue")
			}
			return err
		}, "POST", "/api/v1/accounts/" + acct + "/queues", "", "application/json", `{"name":"orders","max_receive_count":3,"delay_seconds":0}`},
		{"update queue", 200, `{"name":"orders"}`, func(c *Client) error {
			_, err := c.Queues.Update(ctx, "orders", QueueSettings{VisibilityTimeoutSeconds: Int(0)})
			return err
		}, "PATCH", "/api/v1/accounts/" + acct + "/queues/orders", "", "application/json", `{"visibility_timeout_seconds":0}`},
		{"deploy", 201, `{"version":3,"created":true,"alias_moved":true,"sha256":"ab"}`, func(c *Client) error {
			d, err := c.Functions.Deploy(ctx, "f", []byte("\x00asm"), DeployOptions{MemoryMB: 64, Alias: "live", Env: map[string]string{"B": "2", "A": "x=y"}})
			if err == nil && (d.Version != 3 || !d.Created || !d.AliasMoved) {
				return errors.New("wrong deployment")
			}
			return err
		}, "POST", "/api/v1/accounts/" + acct + "/functions/f/versions", "alias=live&env=A%3Dx%3Dy&env=B%3D2&memory_mb=64", "application/wasm", "\x00asm"},
		{"rollback", 200, `{"version":1}`, func(c *Client) error {
			v, err := c.Functions.Rollback(ctx, "f", "live")
			if err == nil && v != 1 {
				return errors.New("wrong version")
			}
			return err
		}, "POST", "/api/v1/accounts/" + acct + "/functions/f/rollback", "", "application/json", `{"alias":"live"}`},
		{"invocations", 200, `{"invocations":[{"function":"f","outcome":"failure"}]}`, func(c *Client) error {
			v, err := c.Invocations.List(ctx, InvocationsOptions{Function: "f", Outcome: "failure", Limit: 5})
			if err == nil && (len(v) != 1 || v[0].Outcome != "failure") {
				return errors.New("wrong invocations")
			}
			return err
		}, "GET", "/api/v1/accounts/" + acct + "/invocations", "function=f&limit=5&outcome=failure", "", ""},
		{"invocations page", 200, `{"invocations":[]}`, func(c *Client) error {
			_, err := c.Invocations.List(ctx, InvocationsOptions{Trigger: "t1", BeforeID: 77,
				Until: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)})
			return err
		}, "GET", "/api/v1/accounts/" + acct + "/invocations", "before_id=77&trigger=t1&until=2026-11-30T10%3A00%3A00Z", "", ""},
		{"minute stats", 200, `{"queue":"orders","minutes":[{"minute":"2026-11-30T10:01:00Z","sends":12,"ready":null}]}`, func(c *Client) error {
			ms, err := c.Queues.MinuteStats(ctx, "orders", 30)
			if err == nil && (len(ms) != 1 || ms[0].Sends != 12 || ms[0].Ready != nil || ms[0].Minute.Minute() != 1) {
				return errors.New("wrong minutes")
			}
			return err
		}, "GET", "/api/v1/accounts/" + acct + "/queues/orders/stats", "minutes=30", "", ""},
		{"get invocation", 200, `{"id":7,"trigger":"t1"}`, func(c *Client) error {
			v, err := c.Invocations.Get(ctx, 7)
			if err == nil && (v.ID != 7 || v.Trigger != "t1") {
				return errors.New("wrong invocation")
			}
			return err
		}, "GET", "/api/v1/accounts/" + acct + "/invocations/7", "", "", ""},
		{"create key", 201, `{"id":"k1","secret":"s"}`, func(c *Client) error {
			k, err := c.Keys.Create(ctx, KeyOptions{Scopes: []string{"mq:send"}, Queues: []string{"orders-*"}})
			if err == nil && k.String() != "k1:s" {
				return errors.New("wrong key")
			}
			return err
		}, "POST", "/api/v1/accounts/" + acct + "/keys", "", "application/json", `{"scopes":["mq:send"],"queues":["orders-*"],"description":""}`},
		{"revoke key with odd id", 204, "", func(c *Client) error {
			return c.Keys.Revoke(ctx, "a/b c")
		}, "DELETE", "/api/v1/accounts/" + acct + "/keys/a/b c", "", "", ""},
		{"create hook", 201, `{}`, func(c *Client) error {
			_, err := c.Hooks.Create(ctx, Hook{Name: "gh", Queue: "events", Verify: "github", Secrets: []string{"x"}})
			return err
		}, "POST", "/api/v1/accounts/" + acct + "/hooks", "", "application/json", `{"name":"gh","queue":"events","verify":"github","secrets":["x"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, f := newFake(t, tt.status, tt.resp, WithAccount(acct), WithUserAgent("test-agent"))
			if err := tt.call(c); err != nil {
				t.Fatal(err)
			}
			r := f.only(t)
			if r.method != tt.method || r.path != tt.path || r.query != tt.query {
				t.Errorf("request %s %s ?%s, want %s %s ?%s", r.method, r.path, r.query, tt.method, tt.path, tt.query)
			}
			if r.auth != "Bearer kid:s3cret" || r.ua != "test-agent" {
				t.Errorf("auth %q, user agent %q", r.auth, r.ua)
			}
			if r.contentType != tt.ctype {
				t.Errorf("content type %q, want %q", r.contentType, tt.ctype)
			}
			if r.body != tt.body {
				t.Errorf("body %q, want %q", r.body, tt.body)
			}
		})
	}
}

func TestPathEscaping(t *testing.T) {
	t.Parallel()
	c, f := newFake(t, 204, "")
	if err := c.Keys.Revoke(context.Background(), "a/b?c"); err != nil {
		t.Fatal(err)
	}
	if got, want := f.only(t).rawPath, "/api/v1/accounts/000000000001/keys/a%2Fb%3Fc"; got != want {
		t.Errorf("path %s, want %s", got, want)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name, ctype, body string
		status            int
		code, msg         string
		is                error
		pred              func(error) bool
	}{
		{"api error", "application/json", `{"error":{"code":"queue_not_found","message":"queue \"x\" not found"}}`, 404,
			"queue_not_found", `queue "x" not found (404 queue_not_found)`, ErrQueueNotFound, IsNotFound},
		{"stale receipt", "application/json", `{"error":{"code":"stale_receipt","message":"stale"}}`, 409,
			"stale_receipt", "stale (409 stale_receipt)", ErrStaleReceipt, IsConflict},
		{"unauthorized", "application/json", `{"error":{"code":"unauthorized","message":"bad key"}}`, 401,
			"unauthorized", "bad key (401 unauthorized)", ErrUnauthorized, IsUnauthorized},
		{"forbidden", "application/json", `{"error":{"code":"forbidden","message":"no"}}`, 403,
			"forbidden", "no (403 forbidden)", ErrForbidden, IsForbidden},
		{"invalid", "application/json", `{"error":{"code":"invalid_argument","message":"max_messages 11"}}`, 400,
			"invalid_argument", "max_messages 11 (400 invalid_argument)", ErrInvalidArgument, IsInvalid},
		{"proxy page", "text/html", "<html>Bad Gateway</html>", 502,
			"http_502", "unexpected response: <html>Bad Gateway</html> (502 http_502)", nil, nil},
		{"empty 503", "text/plain", "", 503,
			"http_503", "unexpected response: Service Unavailable (503 http_503)", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, f := newFake(t, tt.status, tt.body)
			f.ctype = tt.ctype
			_, err := c.MQ.Send(ctx, "x", map[string]int{})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err %v (%T), want *Error", err, err)
			}
			if e.Status != tt.status || e.Code != tt.code || err.Error() != tt.msg {
				t.Errorf("got %d %q %q, want %d %q %q", e.Status, e.Code, err.Error(), tt.status, tt.code, tt.msg)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) is false", err, tt.is)
			}
			if errors.Is(err, ErrInternal) {
				t.Errorf("errors.Is(%v, ErrInternal) is true", err)
			}
			if tt.pred != nil && !tt.pred(err) {
				t.Errorf("predicate false for %v", err)
			}
			if CodeOf(err) != tt.code || StatusOf(err) != tt.status {
				t.Errorf("CodeOf/StatusOf: %q %d", CodeOf(err), StatusOf(err))
			}
		})
	}
}

// A 429 (or a 503 with Retry-After) carries how long the server asked to
// wait; RetryAfter reports it, and a 429 is not an invalid request.
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, code, retryAfter string
		status                 int
		want                   time.Duration
		retry                  bool
	}{
		{"429", CodeTooManyRequests, "1", 429, time.Second, true},
		{"429 without the header", CodeTooManyRequests, "", 429, 0, true},
		{"503 with the header", CodeUnavailable, "5", 503, 5 * time.Second, true},
		{"503 without it", CodeUnavailable, "", 503, 0, false},
		{"400", CodeInvalidArgument, "", 400, 0, false},
		{"a proxy's 502 with the header", "http_502", "5", 502, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, f := newFake(t, tt.status, `{"error":{"code":"`+tt.code+`","message":"m"}}`)
			if tt.retryAfter != "" {
				f.header = http.Header{"Retry-After": {tt.retryAfter}}
			}
			_, err := c.MQ.Receive(context.Background(), "x", ReceiveOptions{})
			if d, retry := RetryAfter(err); d != tt.want || retry != tt.retry {
				t.Fatalf("RetryAfter(%v) = %v, %v; want %v, %v", err, d, retry, tt.want, tt.retry)
			}
			if tt.status == 429 && (IsInvalid(err) || !errors.Is(err, ErrTooManyRequests)) {
				t.Fatalf("a 429: IsInvalid %v, errors.Is ErrTooManyRequests %v", IsInvalid(err), errors.Is(err, ErrTooManyRequests))
			}
		})
	}
}

// TestRefusedBeforeSending: arguments out of range never reach the server.
func TestRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name string
		call func(c *Client) error
		code string
		msg  string
	}{
		{"batch of 0", func(c *Client) error { _, err := c.MQ.SendBatch(ctx, "q", nil); return err }, CodeInvalidArgument, "batch of 0 messages: send 1 to 10"},
		{"batch of 11", func(c *Client) error { _, err := c.MQ.SendBatch(ctx, "q", make([]any, 11)); return err }, CodeInvalidArgument, "batch of 11"},
		{"invalid raw JSON", func(c *Client) error { _, err := c.MQ.Send(ctx, "q", []byte("{nope")); return err }, CodeInvalidJSON, "not valid JSON"},
		{"unmarshalable", func(c *Client) error { _, err := c.MQ.Send(ctx, "q", func() {}); return err }, CodeInvalidArgument, "message body"},
		{"negative delay", func(c *Client) error {
			_, err := c.MQ.Send(ctx, "q", 1, SendOptions{DelaySeconds: -1})
			return err
		}, CodeInvalidArgument, "delay_seconds -1: must be 0 to 43200"},
		{"dedup in batch", func(c *Client) error {
			_, err := c.MQ.SendBatch(ctx, "q", []any{1}, SendOptions{DedupKey: "k"})
			return err
		}, CodeInvalidArgument, "dedup key"},
		{"ttl 0 is none, negative is refused", func(c *Client) error {
			_, err := c.MQ.Send(ctx, "q", 1, SendOptions{TTLSeconds: -1})
			return err
		}, CodeInvalidArgument, "ttl (expires_in_seconds) -1: must be 1 to 1209600"},
		{"ttl too long", func(c *Client) error {
			_, err := c.MQ.SendBatch(ctx, "q", []any{1}, SendOptions{TTLSeconds: 1209601})
			return err
		}, CodeInvalidArgument, "1209601: must be 1 to 1209600"},
		{"no entries", func(c *Client) error { _, err := c.MQ.SendEntries(ctx, "q", nil); return err }, CodeInvalidArgument, "0 entries: send 1 to 1000"},
		{"1001 entries", func(c *Client) error {
			es := make([]SendEntry, 1001)
			for i := range es {
				es[i].Body = json.RawMessage("1")
			}
			_, err := c.MQ.SendEntries(ctx, "q", es)
			return err
		}, CodeInvalidArgument, "1001 entries"},
		{"entry without body", func(c *Client) error {
			_, err := c.MQ.SendEntries(ctx, "q", []SendEntry{{Body: json.RawMessage("1")}, {DelaySeconds: 1}})
			return err
		}, CodeInvalidArgument, "entry 1: no body"},
		{"entry delay", func(c *Client) error {
			_, err := c.MQ.SendEntries(ctx, "q", []SendEntry{{Body: json.RawMessage("1"), DelaySeconds: 43201}})
			return err
		}, CodeInvalidArgument, "delay_seconds 43201: must be 0 to 43200"},
		{"entry ttl", func(c *Client) error {
			_, err := c.MQ.SendEntries(ctx, "q", []SendEntry{{Body: json.RawMessage("1"), ExpiresInSeconds: -5}})
			return err
		}, CodeInvalidArgument, "expires_in_seconds -5: must be 1 to 1209600"},
		{"traversal name", func(c *Client) error { _, err := c.MQ.Send(ctx, "../x", 1); return err }, CodeInvalidName, `queue name "../x"`},
		{"long name", func(c *Client) error { _, err := c.Queues.Get(ctx, strings.Repeat("a", 81)); return err }, CodeInvalidName, "1 to 80"},
		{"empty name", func(c *Client) error { return c.Queues.Delete(ctx, "") }, CodeInvalidName, `queue name ""`},
		{"receive 11", func(c *Client) error {
			_, err := c.MQ.Receive(ctx, "q", ReceiveOptions{MaxMessages: 11})
			return err
		}, CodeInvalidArgument, "max_messages 11: must be 1 to 10"},
		{"wait 21", func(c *Client) error {
			_, err := c.MQ.Receive(ctx, "q", ReceiveOptions{WaitSeconds: 21})
			return err
		}, CodeInvalidArgument, "wait_seconds 21: must be 0 to 20"},
		{"visibility huge", func(c *Client) error { return c.MQ.ChangeVisibility(ctx, "q", 1, 43201, "") }, CodeInvalidArgument, "seconds 43201"},
		{"sequence 0", func(c *Client) error { return c.MQ.Delete(ctx, "q", 0, "") }, CodeInvalidArgument, "sequence 0: must be positive"},
		{"peek 101", func(c *Client) error { _, err := c.MQ.Peek(ctx, "q", 101); return err }, CodeInvalidArgument, "max_messages 101: must be 1 to 100"},
		{"redrive negative", func(c *Client) error { _, err := c.MQ.Redrive(ctx, "q", -1); return err }, CodeInvalidArgument, "max_messages -1"},
		{"minute stats 1441", func(c *Client) error { _, err := c.Queues.MinuteStats(ctx, "q", 1441); return err }, CodeInvalidArgument, "minutes 1441: must be 1 to 1440"},
		{"peek after negative", func(c *Client) error { _, err := c.MQ.Peek(ctx, "q", 0, PageOptions{After: -1}); return err }, CodeInvalidArgument, "after -1"},
		{"redrive no sequences", func(c *Client) error { _, err := c.MQ.RedriveSequences(ctx, "q", nil); return err }, CodeInvalidArgument, "0 sequences: give 1 to 1000"},
		{"redrive 1001 sequences", func(c *Client) error {
			_, err := c.MQ.RedriveSequences(ctx, "q", make([]int64, 1001))
			return err
		}, CodeInvalidArgument, "1001 sequences"},
		{"max receive count 0", func(c *Client) error {
			_, err := c.Queues.Create(ctx, "q", QueueSettings{MaxReceiveCount: Int(0)})
			return err
		}, CodeInvalidArgument, "max_receive_count 0: must be 1 to 1000"},
		{"retention short", func(c *Client) error {
			_, err := c.Queues.Update(ctx, "q", QueueSettings{RetentionSeconds: Int(59)})
			return err
		}, CodeInvalidArgument, "retention_seconds 59: must be 60 to 1209600"},
		{"empty module", func(c *Client) error { _, err := c.Functions.Deploy(ctx, "f", nil, DeployOptions{}); return err }, CodeInvalidArgument, "empty module"},
		{"alias version 0", func(c *Client) error { return c.Functions.SetAlias(ctx, "f", "live", 0) }, CodeInvalidArgument, "version 0"},
		{"memory 4097", func(c *Client) error {
			_, err := c.Functions.Deploy(ctx, "f", []byte("x"), DeployOptions{MemoryMB: 4097})
			return err
		}, CodeInvalidArgument, "memory_mb 4097: must be 1 to 4096"},
		{"limit 1001", func(c *Client) error {
			_, err := c.Invocations.List(ctx, InvocationsOptions{Limit: 1001})
			return err
		}, CodeInvalidArgument, "limit 1001: must be 1 to 1000"},
		{"bad outcome", func(c *Client) error {
			_, err := c.Invocations.List(ctx, InvocationsOptions{Outcome: "ok"})
			return err
		}, CodeInvalidArgument, `outcome "ok"`},
		{"key without scope", func(c *Client) error { _, err := c.Keys.Create(ctx, KeyOptions{}); return err }, CodeInvalidArgument, "scope"},
		{"hook verify", func(c *Client) error {
			_, err := c.Hooks.Create(ctx, Hook{Name: "h", Queue: "q", Verify: "md5"})
			return err
		}, CodeInvalidArgument, `verify "md5"`},
		{"hook without secret", func(c *Client) error {
			_, err := c.Hooks.Create(ctx, Hook{Name: "h", Queue: "q", Verify: "stripe"})
			return err
		}, CodeInvalidArgument, "needs a secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, f := newFake(t, 500, "")
			err := tt.call(c)
			var e *Error
			if !errors.As(err, &e) || e.Status != 0 || e.Code != tt.code || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err %v, want a client-side %s containing %q", err, tt.code, tt.msg)
			}
			if !IsInvalid(err) {
				t.Errorf("IsInvalid(%v) is false", err)
			}
			if n := f.count(); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		endpoint, id, secret string
		opts                 []Option
		want                 string
	}{
		{"", "k", "s", nil, "no endpoint"},
		{"ftp://x", "k", "s", nil, "want http://"},
		{"http://", "k", "s", nil, "want http://"},
		{"http://x?a=1", "k", "s", nil, "query"},
		{"http://x", "", "s", nil, "no access key"},
		{"http://x", "k:1", "s", nil, "must not contain ':'"},
		{"http://x", "k", "s", []Option{WithAccount("12")}, `account "12": want 12 digits`},
	} {
		if _, err := New(tt.endpoint, tt.id, tt.secret, tt.opts...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%q, %q, %q): %v, want %q", tt.endpoint, tt.id, tt.secret, err, tt.want)
		}
	}
	c, err := New("https://example.com/base/", "k", "s")
	if err != nil {
		t.Fatal(err)
	}
	if c.Account() != DefaultAccount || c.Endpoint() != "https://example.com/base" {
		t.Errorf("account %s, endpoint %s", c.Account(), c.Endpoint())
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "config.json")
	if _, ok, err := ReadConfig(path); ok || err != nil {
		t.Fatalf("missing file: ok %v, err %v", ok, err)
	}
	want := Config{Endpoint: "http://127.0.0.1:9", Key: "id:secret", Account: "000000000007"}
	if err := WriteConfig(path, want); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	got, ok, err := ReadConfig(path)
	if err != nil || !ok || got != want {
		t.Fatalf("ReadConfig: %+v %v %v", got, ok, err)
	}
	env := map[string]string{EnvEndpoint: "http://other:1", EnvKey: "k2:s2"}
	got, err = loadConfig(path, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if got.Endpoint != "http://other:1" || got.Key != "k2:s2" || got.Account != want.Account {
		t.Errorf("env did not override: %+v", got)
	}
	c, err := got.Client()
	if err != nil || c.Account() != want.Account {
		t.Fatalf("Client: %v %v", c, err)
	}
	if _, err := (Config{Endpoint: "http://x", Key: "nocolon"}).Client(); err == nil || !strings.Contains(err.Error(), "ID:SECRET") {
		t.Errorf("key without colon: %v", err)
	}
	if _, err := (Config{Key: "a:b"}).Client(); err == nil || !strings.Contains(err.Error(), "SLUICE_ENDPOINT") {
		t.Errorf("no endpoint: %v", err)
	}
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadConfig(path); err == nil {
		t.Error("corrupt config read without error")
	}
}

func TestContextCancel(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(block) })
	c, err := New(srv.URL, "k", "s")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.MQ.Receive(ctx, "q", ReceiveOptions{WaitSeconds: 20}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	c, err := New(url, "k", "s")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Queues.List(context.Background())
	if err == nil || !strings.Contains(err.Error(), "is the server running there?") || strings.Count(err.Error(), url) != 1 {
		t.Errorf("err %v", err)
	}
}
