package abi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseOutput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, out string
		want      []Failure
		invalid   bool
	}{
		{name: "empty", out: ""},
		{name: "blank", out: " \n\t"},
		{name: "null", out: "null"},
		{name: "no failures", out: `{}`},
		{name: "empty list", out: `{"batchItemFailures":[]}`},
		{name: "one", out: `{"batchItemFailures":[{"itemIdentifier":"7","retryAfterSeconds":60,"error":"smtp 451"}]}`,
			want: []Failure{{ID: "7", RetryAfterSeconds: 60, Error: "smtp 451"}}},
		{name: "permanent and extra fields", out: `{"batchItemFailures":[{"itemIdentifier":"a","permanent":true,"x":1}],"y":2}`,
			want: []Failure{{ID: "a", Permanent: true}}},
		{name: "clamped", out: `{"batchItemFailures":[{"itemIdentifier":"a","retryAfterSeconds":-5},{"itemIdentifier":"b","retryAfterSeconds":99999999}]}`,
			want: []Failure{{ID: "a"}, {ID: "b", RetryAfterSeconds: MaxRetryAfterSeconds}}},
		{name: "not json", out: "hello", invalid: true},
		{name: "truncated", out: `{"batchItemFailures":[`, invalid: true},
		{name: "array", out: `[]`, invalid: true},
		{name: "trailing", out: `{} {}`, invalid: true},
		{name: "numeric id", out: `{"batchItemFailures":[{"itemIdentifier":7}]}`, invalid: true},
		{name: "missing id", out: `{"batchItemFailures":[{"retryAfterSeconds":1}]}`, invalid: true},
		{name: "empty id", out: `{"batchItemFailures":[{"itemIdentifier":""}]}`, invalid: true},
		{name: "fractional delay", out: `{"batchItemFailures":[{"itemIdentifier":"a","retryAfterSeconds":1.5}]}`, invalid: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseOutput([]byte(tc.out))
			if tc.invalid {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("ParseOutput(%q) error = %v, want ErrInvalid", tc.out, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseOutput(%q): %v", tc.out, err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("ParseOutput(%q) = %+v, want %+v", tc.out, got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("ParseOutput(%q)[%d] = %+v, want %+v", tc.out, i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestParseOutputCutsLongErrors(t *testing.T) {
	t.Parallel()
	out, _ := json.Marshal(map[string]any{"batchItemFailures": []any{map[string]any{"itemIdentifier": "a", "error": strings.Repeat("é", 5000)}}})
	got, err := ParseOutput(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got[0].Error) > MaxErrorBytes+len("…") {
		t.Fatalf("error kept %d bytes, want at most %d", len(got[0].Error), MaxErrorBytes)
	}
}

func FuzzParseOutput(f *testing.F) {
	for _, s := range []string{"", "null", "{}", `{"batchItemFailures":[{"itemIdentifier":"1","retryAfterSeconds":3,"permanent":true,"error":"x"}]}`,
		`{"batchItemFailures":[{"itemIdentifier":""}]}`, `[1,2]`, `{"batchItemFailures":null}`, "\xff\xfe"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		fs, err := ParseOutput(out)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			if fs != nil {
				t.Fatalf("failures %v returned with error", fs)
			}
			return
		}
		for _, f := range fs {
			if f.ID == "" {
				t.Fatal("failure without id accepted")
			}
			if f.RetryAfterSeconds < 0 || f.RetryAfterSeconds > MaxRetryAfterSeconds {
				t.Fatalf("retry delay %d out of range", f.RetryAfterSeconds)
			}
			if len(f.Error) > MaxErrorBytes+len("…") {
				t.Fatalf("error of %d bytes", len(f.Error))
			}
		}
	})
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "quo\"te\\", "ctl\x00\x1f\n\t", "é€😀", "\xff", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc := AppendString(nil, s)
		var got string
		if err := json.Unmarshal(enc, &got); err != nil {
			t.Fatalf("AppendString(%q) = %s: not valid JSON: %v", s, enc, err)
		}
		want, _ := json.Marshal(s)
		var w string
		_ = json.Unmarshal(want, &w)
		if got != w {
			t.Fatalf("AppendString(%q) decodes to %q, encoding/json gives %q", s, got, w)
		}
	})
}

func TestParseEmits(t *testing.T) {
	t.Parallel()
	o, err := Parse([]byte(`{"batchItemFailures":[{"itemIdentifier":"2"}],"emit":[
		{"queue":"shipped","body":{"n":1},"headers":{"h":"v"},"delay_seconds":5,"dedup_key":"k","for":"1"},
		{"topic":"audit","body":null,"headers":null}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Failures) != 1 || len(o.Emits) != 2 {
		t.Fatalf("Parse = %+v", o)
	}
	e := o.Emits[0]
	if e.Queue != "shipped" || string(e.Body) != `{"n":1}` || string(e.Headers) != `{"h":"v"}` || e.DelaySeconds != 5 || e.DedupKey != "k" || e.For != "1" {
		t.Fatalf("emit[0] = %+v", e)
	}
	if e := o.Emits[1]; e.Topic != "audit" || string(e.Body) != "null" || e.Headers != nil {
		t.Fatalf("emit[1] = %+v", e)
	}
	for _, tc := range []struct{ out, want string }{
		{`{"emit":[{"body":1}]}`, "emit[0]: names neither a queue nor a topic"},
		{`{"emit":[{"queue":"a","body":1},{"queue":"a","topic":"b","body":1}]}`, "emit[1]: names both"},
		{`{"emit":[{"queue":"a"}]}`, "emit[0]: lacks a body"},
		{`{"emit":[{"queue":"a","body":1,"group":""}]}`, "emit[0]: group of 0 characters"},
		{`{"emit":[{"topic":"a","body":1,"group":"g"}]}`, "emit[0]: a topic emit takes no delay_seconds, dedup_key or group"},
		{`{"emit":[{"queue":"a","body":1,"delay_seconds":-1}]}`, "emit[0]: delay_seconds -1 out of range"},
		{`{"emit":[{"queue":"a","body":1,"headers":[1]}]}`, "emit[0]: headers is not a JSON object"},
		{`{"emit":[{"topic":"a","body":1,"dedup_key":"x"}]}`, "emit[0]: a topic emit takes no"},
		{`{"emit":[{"queue":"a","body":1,"for":""}]}`, "emit[0]: empty for"},
		{`{"emit":{"queue":"a"}}`, "cannot unmarshal"},
		{`{"emit":[` + strings.Repeat(`{"queue":"a","body":1},`, MaxEmits) + `{"queue":"a","body":1}]}`, "1001 emit entries, over the limit of 1000"},
	} {
		_, err := Parse([]byte(tc.out))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%.60s) error = %v, want one containing %q", tc.out, err, tc.want)
		}
	}
}
