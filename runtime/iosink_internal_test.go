package runtime

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/rs/zerolog"
)

// A guest's JSON log line keeps its own fields, but the keys the host sets
// (account, function, version, invocation, trigger, stream, time) are the
// host's, once.
func TestGuestLogLineCannotOverrideHostKeys(t *testing.T) {
	var out bytes.Buffer
	base := functionLogger(zerolog.New(&out).With().Timestamp().Logger(), FunctionConfig{Account: "acct-1", Name: "f", Version: 2})
	s := stderrSink{base: &base, invID: "42", trigger: "queue:orders", limit: 1 << 10, stream: "stderr"}
	line := `{"level":"warn","message":"hi","account":"victim","function":"evil","version":9,"invocation":"1","trigger":"x","stream":"stdout","time":"2020-01-01T00:00:00Z","order":7}` + "\n"
	if _, err := s.Write([]byte(line)); err != nil {
		t.Fatal(err)
	}
	s.finish()
	got := out.Bytes()
	var fields map[string]any
	if err := json.Unmarshal(got, &fields); err != nil {
		t.Fatalf("log line %q: %v", got, err)
	}
	want := map[string]any{"level": "warn", "message": "hi", "account": "acct-1", "function": "f", "version": 2.0, "invocation": "42",
		"trigger": "queue:orders", "stream": "stderr", "order": 7.0}
	for k, v := range want {
		if fields[k] != v {
			t.Errorf("%s = %v, want %v (line %s)", k, fields[k], v, got)
		}
	}
	for _, k := range []string{`"stream"`, `"time"`, `"account"`} {
		if n := bytes.Count(got, []byte(k)); n != 1 {
			t.Errorf(`%s appears %d times in %s`, k, n, got)
		}
	}
	if bytes.Contains(got, []byte("2020-01-01")) {
		t.Errorf("the guest's time was kept: %s", got)
	}
}
