package jsoncheck

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var cases = []struct {
	in    string
	valid bool
	depth int
}{
	{`0`, true, 0},
	{` -0.5e+10 `, true, 0},
	{`1.`, false, 0},
	{`01`, false, 0},
	{`-`, false, 0},
	{`1e`, false, 0},
	{`.5`, false, 0},
	{`"a\u00e9\n"`, true, 0},
	{`"\x"`, false, 0},
	{`"\u12"`, false, 0},
	{"\"\t\"", false, 0},
	{`"abc`, false, 0},
	{`true`, true, 0},
	{`tru`, false, 0},
	{`nul`, false, 0},
	{`[]`, true, 1},
	{`{}`, true, 1},
	{`[1,[2,{"a":[3]}]]`, true, 4},
	{`{"a":1,"b":{"c":[]}}`, true, 3},
	{`[1,]`, false, 0},
	{`[,1]`, false, 0},
	{`{"a"}`, false, 0},
	{`{"a":}`, false, 0},
	{`{a:1}`, false, 0},
	{`{"a":1,}`, false, 0},
	{`[1}`, false, 0},
	{`{"a":1]`, false, 0},
	{`[1] [2]`, false, 0},
	{`[`, false, 0},
	{``, false, 0},
	{`   `, false, 0},
	{`["]"]`, true, 1},
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range cases {
		valid, depth := Check([]byte(tc.in))
		if valid != tc.valid || (valid && depth != tc.depth) {
			t.Errorf("Check(%q) = %v, %d; want %v, %d", tc.in, valid, depth, tc.valid, tc.depth)
		}
		if valid != json.Valid([]byte(tc.in)) {
			t.Errorf("Check(%q) disagrees with json.Valid", tc.in)
		}
	}
}

func TestCheckBeyondStdlibDepth(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	if valid, depth := Check([]byte(deep)); !valid || depth != 20000 {
		t.Fatalf("Check(20000 arrays) = %v, %d", valid, depth)
	}
	if valid, _ := Check([]byte(deep + "]")); valid {
		t.Fatal("Check accepted an extra ]")
	}
}

// FuzzCheck checks Check against encoding/json wherever encoding/json can
// judge (it refuses nesting beyond 10000 levels).
func FuzzCheck(f *testing.F) {
	for _, tc := range cases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		valid, depth := Check(b)
		if valid && depth > 10000 {
			return
		}
		if valid != json.Valid(b) {
			t.Fatalf("Check(%q) valid = %v; json.Valid = %v", b, valid, !valid)
		}
		if !valid {
			return
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if got := measure(v); got != depth {
			t.Fatalf("Check(%q) depth = %d; decoded value nests %d", b, depth, got)
		}
	})
}

// measure is the nesting depth of a decoded JSON value.
func measure(v any) int {
	d := 0
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			d = max(d, measure(e))
		}
		return d + 1
	case map[string]any:
		for _, e := range v {
			d = max(d, measure(e))
		}
		return d + 1
	}
	return 0
}
