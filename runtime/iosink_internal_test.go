package runtime

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/rs/zerolog"
)

// A guest's JSON log line keeps its own fields, but the keys the host sets
// (function, version, invocation, trigger, stream) are the host's, once.
func TestGuestLogLineCannotOverrideHostKeys(t *testing.T) {
	var out bytes.Buffer
	base := zerolog.New(&out).With().Str("function", "f").Int("version", 2).Logger()
	s := stderrSink{base: &base, invID: "42", trigger: "queue:orders", limit: 1 << 10, stream: "stderr"}
	line := `{"level":"warn","message":"hi","function":"evil","version":9,"invocation":"1","trigger":"x","stream":"stdout","order":7}` + "\n"
	if _, err := s.Write([]byte(line)); err != nil {
		t.Fatal(err)
	}
	s.finish()
	got := out.Bytes()
	var fields map[string]any
	if err := json.Unmarshal(got, &fields); err != nil {
		t.Fatalf("log line %q: %v", got, err)
	}
	want := map[string]any{"level": "warn", "message": "hi", "function": "f", "version": 2.0, "invocation": "42",
		"trigger": "queue:orders", "stream": "stderr", "order": 7.0}
	for k, v := range want {
		if fields[k] != v {
			t.Errorf("%s = %v, want %v (line %s)", k, fields[k], v, got)
		}
	}
	if n := bytes.Count(got, []byte(`"stream"`)); n != 1 {
		t.Errorf(`"stream" appears %d times in %s`, n, got)
	}
}
