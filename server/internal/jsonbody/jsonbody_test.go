package jsonbody

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want error
	}{
		{`{"a":1}`, nil},
		{` [1, "x", {"b": null}] `, nil},
		{`"\"[[[["`, nil},
		{strings.Repeat("[", 64) + strings.Repeat("]", 64), nil},
		{strings.Repeat("[", 65) + strings.Repeat("]", 65), ErrTooDeep},
		{"", ErrEmpty},
		{`{"a":1} x`, ErrSyntax},
		{`{"a":1}{}`, ErrSyntax},
		{`{"a":}`, ErrSyntax},
		{"{\"a\":\"\xff\"}", ErrInvalidUTF8},
		{"\"\xed\xa0\x80\"", ErrInvalidUTF8},
	} {
		err := Check([]byte(tc.in), 64)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("Check(%q) = %v, want %v", tc.in, err, tc.want)
		}
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{}`, `[[["x"]]]`, `{"a":"\u00e9"}`, "\xff", `1 2`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if Check(data, 8) != nil {
			return
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("Check accepted %q, which does not decode: %v", data, err)
		}
		if !utf8.Valid(data) {
			t.Fatalf("Check accepted invalid UTF-8 %q", data)
		}
	})
}
