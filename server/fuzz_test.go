package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/functions"
)

// Every decoder of untrusted request bodies must either accept or return
// an *apiError with a 4xx status: never panic, never an internal error.

func checkDecodeError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status < 400 || ae.Status >= 500 || ae.Message == "" {
		t.Fatalf("decoder returned %v (%T), want a 4xx apiError", err, err)
	}
}

func FuzzDecodeSend(f *testing.F) {
	for _, s := range []string{`{}`, `[1,2]`, `[]`, `"x"`, `{"a":`, "\xff", `[` + `{}` + `]`, ` {"a":[1,{"b":null}]} `} {
		f.Add([]byte(s), "delay_seconds=5&dedup_key=k")
		f.Add([]byte(s), "expires_in_seconds=60")
	}
	f.Add([]byte(`[1]`), "delay_seconds=1.5")
	f.Fuzz(func(t *testing.T, body []byte, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		req, err := decodeSend(body, q)
		checkDecodeError(t, err)
		if err == nil && req.single == nil && (len(req.batch) < 1 || len(req.batch) > maxBatch) {
			t.Fatalf("accepted a batch of %d", len(req.batch))
		}
		if err == nil && (req.delay < 0 || req.delay.Seconds() > maxDelay) {
			t.Fatalf("accepted delay %v", req.delay)
		}
		if err == nil && (req.expires < 0 || req.expires.Seconds() > maxExpires || (req.expires > 0 && req.expires < time.Second)) {
			t.Fatalf("accepted expiration %v", req.expires)
		}
	})
}

func FuzzDecodeSendEntries(f *testing.F) {
	for _, s := range []string{`{"entries":[{"body":{"a":1},"headers":{"k":"v"},"delay_seconds":5,"expires_in_seconds":60,"dedup_key":"d"}]}`,
		`{"entries":[]}`, `{"entries":[{"body":null}]}`, `{"entries":[{"body":1,"headers":{"k":1}}]}`, `{"entries":[{"body":1,"dedup_key":7}]}`,
		`{"entries":[{"body":1,"delay_seconds":1.5}]}`, `{"entries":{}}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ms, err := decodeSendEntries(body)
		checkDecodeError(t, err)
		if err == nil && (len(ms) < 1 || len(ms) > maxEntries) {
			t.Fatalf("accepted %d entries", len(ms))
		}
		for _, m := range ms {
			if len(m.Body) == 0 || m.Delay < 0 || m.Delay.Seconds() > maxDelay || m.ExpiresIn < 0 || m.ExpiresIn.Seconds() > maxExpires || len(m.DedupKey) > 128 {
				t.Fatalf("accepted %+v", m)
			}
		}
	})
}

func FuzzDecodeReceive(f *testing.F) {
	for _, s := range []string{`{}`, `{"max_messages":10,"wait_seconds":20,"visibility_timeout_seconds":0,"delete":true}`,
		`{"max_messages":1.5}`, `{"max_messages":"1"}`, `{"x":1}`, `[]`, `null`, `{"max_messages":-0}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) == 0 {
			body = nil
		}
		o, err := decodeReceive(body)
		checkDecodeError(t, err)
		if err == nil && (o.Max < 1 || o.Max > maxBatch || o.Wait < 0 || o.Wait.Seconds() > 20 || o.VisibilityTimeout < 0) {
			t.Fatalf("accepted %+v", o)
		}
	})
}

func FuzzDecodeVisibility(f *testing.F) {
	for _, s := range []string{`{"seconds":0}`, `{"seconds":43200,"receipt":"0b1e3c4a-8f1d-4d3e-9a7b-2c5d6e7f8a9b"}`, `{"seconds":1e3}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, _, err := decodeVisibility(body)
		checkDecodeError(t, err)
		if err == nil && (d < 0 || d.Seconds() > maxDelay) {
			t.Fatalf("accepted %v", d)
		}
	})
}

func FuzzDecodeQueueOptions(f *testing.F) {
	for _, s := range []string{`{"name":"q"}`, `{"name":"q","max_receive_count":3}`, `{"delay_seconds":0.5}`, `{"name":1}`, `[]`} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, withName bool) {
		_, _, _, err := decodeQueueOptions(body, withName)
		checkDecodeError(t, err)
	})
}

func FuzzDecodeTrigger(f *testing.F) {
	for _, s := range []string{`{"kind":"queue","queue":"q","function":"f"}`,
		`{"kind":"cron","cron_spec":"*/5 * * * *","queue":"q","enqueue_body":{"a":1},"timezone":"Europe/Paris"}`,
		`{"kind":"cron","cron_spec":"@every 1s","function":"f"}`, `{"kind":"queue","batch_size":1e9}`} {
		f.Add([]byte(s), "t")
	}
	f.Fuzz(func(t *testing.T, body []byte, name string) {
		_, err := decodeTrigger(body, "000000000001", name)
		checkDecodeError(t, err)
	})
}

func FuzzDecodeDeploy(f *testing.F) {
	f.Add("memory_mb=64&timeout_ms=30000&alias=live&env=A=b&env=C=d")
	f.Add("memory_mb=0&env==x")
	f.Add("emits=orders-*&emits=audit&emits=a[")
	f.Fuzz(func(t *testing.T, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		cfg, _, err := decodeDeploy(q)
		checkDecodeError(t, err)
		if err == nil && (cfg.MemoryMiB < 1 || cfg.Timeout <= 0) {
			t.Fatalf("accepted %+v", cfg)
		}
		for _, p := range cfg.Capabilities.Emits {
			if err == nil && functions.CheckEmitPattern(p) != nil {
				t.Fatalf("accepted emits pattern %q", p)
			}
		}
	})
}

// FuzzHandler sends arbitrary requests, with a valid key, through the
// whole Handler on a real database: every answer is JSON, and none is a
// 5xx.
func FuzzHandler(f *testing.F) {
	e := newEnv(f)
	acct, tok := e.admin("q")
	seeds := []struct{ method, path, ctype, body string }{
		{"POST", "/{a}/q/messages", "application/json", `{"a":1}`},
		{"POST", "/{a}/q/messages?delay_seconds=5", "application/json", `[1,{"b":[2]}]`},
		{"POST", "/{a}/q/messages/receive", "application/json", `{"max_messages":3,"wait_seconds":0}`},
		{"GET", "/{a}/q/messages?max_messages=3", "", ""},
		{"DELETE", "/{a}/q/messages/1?receipt=00000000-0000-0000-0000-000000000001", "", ""},
		{"POST", "/{a}/q/messages/1/visibility", "application/json", `{"seconds":5}`},
		{"GET", "/{a}/q/dlq", "", ""},
		{"POST", "/{a}/q/dlq/redrive", "application/json", `{"max_messages":2}`},
		{"POST", "/v1/accounts/{a}/queues", "application/json", `{"name":"z","delay_seconds":3}`},
		{"PATCH", "/v1/accounts/{a}/queues/q", "application/json", `{"max_receive_count":2}`},
		{"PUT", "/v1/accounts/{a}/triggers/t", "application/json", `{"kind":"queue","queue":"q","function":"f"}`},
		{"GET", "/v1/accounts/{a}/invocations?since=2026-01-01T00:00:00Z&limit=3", "", ""},
		{"POST", "/v1/accounts/{a}/keys", "application/json", `{"scopes":["mq:send"],"queues":["q*"]}`},
		{"POST", "/v1/accounts/{a}/hooks", "application/json", `{"name":"h","queue":"q","verify":"none"}`},
		{"POST", "/hooks/{a}/h", "text/plain", `hello`},
		{"PUT", "/v1/accounts/{a}/functions/f/aliases/live", "application/json", `{"version":1}`},
		{"POST", "/v1/accounts/{a}/functions/f/versions?memory_mb=8", "application/wasm", "\x00asm\x01\x00\x00\x00"},
		{"GET", "/metrics", "", ""},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.ctype, []byte(s.body))
	}
	h := e.srv.Handler()
	f.Fuzz(func(t *testing.T, method, path, ctype string, body []byte) {
		path = strings.ReplaceAll(path, "{a}", acct)
		if !strings.HasPrefix(path, "/") || strings.Contains(path, "/metrics") {
			return
		}
		u, err := url.ParseRequestURI(path)
		if err != nil || len(body) > 1<<16 {
			return
		}
		req, err := http.NewRequest(method, "http://sluice"+u.RequestURI(), bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req.WithContext(ctx))
		if w.Code >= 500 {
			t.Fatalf("%s %s (%s) %q: %d %s", method, path, ctype, body, w.Code, w.Body)
		}
		if w.Code >= 400 && !json.Valid(w.Body.Bytes()) {
			t.Fatalf("%s %s: %d with a body that is not JSON: %s", method, path, w.Code, w.Body)
		}
	})
}
