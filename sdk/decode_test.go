package sdk

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

const sampleBatch = `{"version":1,"function":{"name":"send","version":2},"trigger":{"type":"queue","source":"emails"},"messages":[` +
	`{"id":"1","attempt":1,"created_at":"2026-11-30T12:00:00Z","headers":null,"body":{"a":[1,2,{"b":"c,]}"}],"d":"\"q\""}},` +
	`{"id":"2","attempt":3,"created_at":"2026-11-30T12:00:00.123456789Z","headers":{"k":"v"},"body":"text"},` +
	`{"id":"3","attempt":1,"created_at":"2026-11-30T12:00:00+02:00","headers":null,"body":-1.5e3},` +
	`{"id":"4","attempt":1,"created_at":"2026-11-30T12:00:00Z","headers":null,"body":[]}]}`

func TestDecodeBatchFastPath(t *testing.T) {
	t.Parallel()
	var fast Batch
	d := decoder{buf: []byte(sampleBatch)}
	if err := d.batch(&fast); err != nil {
		t.Fatalf("fast path refused the host's shape: %v", err)
	}
	var slow Batch
	if err := json.Unmarshal([]byte(sampleBatch), &slow); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("fast path decoded\n%+v\nencoding/json\n%+v", fast, slow)
	}
}

func TestDecodeBatchFallsBack(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{"messages":[{"id":"caf\u00e9","body":1}]}`,
		`{"version":1,"extra":true,"function":{},"trigger":{},"messages":[]}`,
		` { "version" : 1 , "function" : { "name" : "x" } , "trigger" : { } , "messages" : [ { "id" : "1" , "body" : { } } ] } `,
	} {
		var got, want Batch
		if err := decodeBatch([]byte(in), &got); err != nil {
			t.Fatalf("decodeBatch(%s): %v", in, err)
		}
		json.Unmarshal([]byte(in), &want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeBatch(%s) = %+v, want %+v", in, got, want)
		}
	}
}

// FuzzDecodeBatch checks that whatever the fast path accepts, encoding/json
// decodes to the same batch.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(sampleBatch)
	f.Add(`{"version":1,"function":{"name":"","version":0},"trigger":{"type":"","source":""},"messages":[]}`)
	f.Add(`{"version":01,"function":{},"trigger":{},"messages":[{"body":tru}]}`)
	f.Add(`{"version":1,"function":{},"trigger":{},"messages":[{"attempt":-0,"created_at":"2024-02-29T23:59:59.000000001Z"}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		var fast Batch
		d := decoder{buf: []byte(in)}
		if d.batch(&fast) != nil {
			return
		}
		var slow Batch
		if err := json.Unmarshal([]byte(in), &slow); err != nil {
			t.Fatalf("fast path accepted %q, encoding/json refuses it: %v", in, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("input %q: fast path decoded\n%#v\nencoding/json\n%#v", in, fast, slow)
		}
	})
}

func BenchmarkDecodeBatch(b *testing.B) {
	in := []byte(sampleBatch)
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			var bt Batch
			if err := decodeBatch(in, &bt); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var bt Batch
			if err := json.Unmarshal(in, &bt); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// validJSON reports whether v is exactly one JSON value, accepting what
// encoding/json's scanner accepts (bytes >= 0x20 inside strings, no UTF-8
// check). It may reject valid but deeply nested input (raw then leaves the
// batch to encoding/json).
func validJSON(v []byte) bool {
	p := jsonValidator{b: v}
	p.ws()
	if !p.value(0) {
		return false
	}
	p.ws()
	return p.i == len(p.b)
}

// FuzzValidJSON checks that validJSON never accepts what encoding/json
// rejects, and accepts every valid value that is not deeply nested.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e-3,true,false,null,"x\u00e9\n"]}`, `-0`, `01`, `1.`, `"\x"`, `[1,]`, `{"a" 1}`, ` [] `, `"é"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, want := validJSON([]byte(s)), json.Valid([]byte(s))
		if got && !want {
			t.Fatalf("validJSON accepts %q, encoding/json does not", s)
		}
		if want && !got && !strings.Contains(s, strings.Repeat("[", maxDepth/2)) && !strings.Contains(s, strings.Repeat("{", 10)) {
			// Shallow valid input must take the fast path.
			depth, maxSeen := 0, 0
			for _, c := range s {
				switch c {
				case '[', '{':
					depth++
					maxSeen = max(maxSeen, depth)
				case ']', '}':
					depth--
				}
			}
			if maxSeen < 50 {
				t.Fatalf("validJSON rejects valid %q", s)
			}
		}
	})
}

// BenchmarkDecodeHostBatch decodes a batch of 1,000 messages as the host
// writes them (runtime/invocation.go): the guest's fixed cost per message.
func BenchmarkDecodeHostBatch(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"version":1,"function":{"name":"noop","version":1},"trigger":{"type":"queue","source":"drain"},"messages":[`)
	for i := range 1000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":"%d","attempt":1,"created_at":"2026-12-03T04:05:06.%06dZ","headers":null,"body":{"n":1}}`, 1000000+i, i*997)
	}
	sb.WriteString(`]}`)
	in := []byte(sb.String())
	for b.Loop() {
		var bt Batch
		if err := decodeBatch(in, &bt); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/message")
}

// TestParseUTC checks the fast timestamp parser against time.Time's own
// (encoding/json's) on the host's form and on forms it must leave to it.
func TestParseUTC(t *testing.T) {
	t.Parallel()
	check := func(s string) {
		t.Helper()
		var want time.Time
		wantErr := want.UnmarshalJSON([]byte(`"` + s + `"`))
		got, ok := parseUTC(s)
		switch {
		case ok && wantErr != nil:
			t.Errorf("parseUTC(%q) = %v, time.Time refuses it: %v", s, got, wantErr)
		case ok && !reflect.DeepEqual(got, want):
			t.Errorf("parseUTC(%q) = %#v, time.Time parses %#v", s, got, want)
		}
	}
	for _, s := range []string{
		"2026-11-30T12:00:00Z", "2026-11-30T12:00:00.5Z", "2026-11-30T12:00:00.123456789Z",
		"2026-11-30T12:00:00.1234567891Z", "2026-11-30T12:00:00.Z", "2026-11-30T12:00:00+02:00",
		"2024-02-29T00:00:00Z", "2025-02-29T00:00:00Z", "2000-02-29T23:59:59Z", "1900-02-29T00:00:00Z",
		"2026-04-31T00:00:00Z", "2026-12-31T24:00:00Z", "2026-12-31T23:60:00Z", "2026-12-31T23:59:60Z",
		"2026-00-10T00:00:00Z", "2026-13-10T00:00:00Z", "2026-01-00T00:00:00Z", "0000-01-01T00:00:00Z",
		"0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z", "1969-12-31T23:59:59.9Z",
		"2026-11-30t12:00:00Z", "2026-11-30T12:00:00z", "2026-1-30T12:00:00Z", "2026-11-30T12:00:0aZ",
	} {
		check(s)
	}
	if _, ok := parseUTC("2026-12-03T04:05:06.123456Z"); !ok {
		t.Error("parseUTC refuses the host's form")
	}
	// Every day of four years (a leap year among them) at odd times.
	for d := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() < 2027; d = d.Add(24*time.Hour + 37*time.Minute + 13*time.Second + 1234567) {
		s := d.Format(time.RFC3339Nano)
		if _, ok := parseUTC(s); !ok {
			t.Errorf("parseUTC(%q) refused", s)
		}
		check(s)
	}
}
