package sdk

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
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
