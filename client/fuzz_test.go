package client

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// The client decodes what a server (or a proxy in front of it) sends: the
// decoders must never panic and always yield a usable error message.

func FuzzErrorFrom(f *testing.F) {
	f.Add(404, []byte(`{"error":{"code":"queue_not_found","message":"queue \"x\" not found"}}`))
	f.Add(502, []byte("<html>Bad Gateway</html>"))
	f.Add(500, []byte(""))
	f.Add(400, []byte(`{"error":{"code":"","message":"x"}}`))
	f.Add(413, []byte("\xff\xfe"+strings.Repeat("é", 300)))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		e := errorFrom(status, body)
		if e.Code == "" || e.Message == "" || e.Status != status {
			t.Fatalf("incomplete error %+v", e)
		}
		if !utf8.ValidString(e.Error()) && utf8.Valid(body) {
			t.Fatalf("invalid UTF-8 message from valid input: %q", e.Error())
		}
	})
}

func FuzzDecodeList(f *testing.F) {
	f.Add([]byte(`{"messages":[{"sequence":1,"body":{"a":1},"created_at":"2026-11-30T12:00:00Z"}]}`))
	f.Add([]byte(`[{"sequence":2,"receipt":"r"}]`))
	f.Add([]byte(`{"messages":null}`))
	f.Add([]byte(`null`))
	f.Add([]byte(``))
	f.Add([]byte(`{"messages":[{"sequence":"x"}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		msgs, err := decodeList[Message](raw, "messages")
		if err == nil && msgs == nil {
			t.Fatal("nil list without an error")
		}
	})
}
