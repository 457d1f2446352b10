package relaxedjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParse(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		// Strict JSON: compacted, otherwise unchanged.
		{`{"hello": "world"}`, `{"hello":"world"}`},
		{` [1, 2.50, -0, 1E+3, "<&>", "\u00e9\ud83d\ude00"] `, `[1,2.50,-0,1E+3,"<&>","\u00e9\ud83d\ude00"]`},
		{`"just a string"`, `"just a string"`},
		{`null`, `null`},
		// The brief's examples.
		{`{hello:world}`, `{"hello":"world"}`},
		{`{id:1,tags:[a,b],ok:true,n:null,nested:{x:1.5}}`, `{"id":1,"tags":["a","b"],"ok":true,"n":null,"nested":{"x":1.5}}`},
		{`[{id:1},{id:2}]`, `[{"id":1},{"id":2}]`},
		// Bare words.
		{`{url:https://example.com/a?b=c&d=e#f}`, `{"url":"https://example.com/a?b=c&d=e#f"}`},
		{`{email:ops@example.com, when:2026-11-30T12:00:00Z}`, `{"email":"ops@example.com","when":"2026-11-30T12:00:00Z"}`},
		{`[True, FALSE, Null, nil, NaN, Infinity, -Infinity]`, `["True","FALSE","Null","nil","NaN","Infinity","-Infinity"]`},
		{`[1.2.3, 007, 0x10, +1, 1e, -, 1_000, .5, 5.]`, `["1.2.3","007","0x10","+1","1e","-","1_000",".5","5."]`},
		{`[0, -1, 3.25e-2, 1E9]`, `[0,-1,3.25e-2,1E9]`},
		{`{true:false, null:1, 2:x}`, `{"true":false,"null":1,"2":"x"}`},
		{`{a:b:c}`, `{"a":"b:c"}`},
		{`{ünïcødé:日本語}`, `{"ünïcødé":"日本語"}`},
		{`{a:<b>}`, `{"a":"<b>"}`},
		{`hello`, `"hello"`},
		{`42`, `42`},
		// Quotes.
		{`{msg:'hello world'}`, `{"msg":"hello world"}`},
		{`{'a b':'it\'s "quoted"'}`, `{"a b":"it's \"quoted\""}`},
		{`{"mixed":'single', bare:"double"}`, `{"mixed":"single","bare":"double"}`},
		{"{s:'tab\there\nnewline'}", `{"s":"tab\there\nnewline"}`},
		{`['\u00e9\ud83d\ude00\/\b\f\r']`, `["é😀/\b\f\r"]`},
		{`['\ud800x', '\udc00\u0041']`, "[\"\uFFFDx\",\"\uFFFDA\"]"},
		{`['\ud800\u0041']`, "[\"\uFFFDA\"]"},
		{`{"a":1,}`, `{"a":1}`},
		// Trailing commas and white space.
		{`[a,b,]`, `["a","b"]`},
		{" { a : 1 ,\n b : [ ] , c : { } , } ", `{"a":1,"b":[],"c":{}}`},
		{`[]`, `[]`},
	}
	for _, tc := range cases {
		got, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("Parse(%q) = %s; want %s", tc.in, got, tc.want)
		}
		if !json.Valid(got) {
			t.Errorf("Parse(%q) = %s: not valid JSON", tc.in, got)
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in  string
		msg string
	}{
		{``, `relaxedjson: at byte 0: expected a value (object, array, string, number, true, false, null or a bare word), found end of input`},
		{`   `, `relaxedjson: at byte 3: expected a value (object, array, string, number, true, false, null or a bare word), found end of input`},
		{`{a:1 b:2}`, `relaxedjson: at byte 5: expected ',' or '}' after an object member (a bare word ends at white space; quote text with spaces: 'hello world'), found 'b'`},
		{`{msg:hello world}`, `relaxedjson: at byte 11: expected ',' or '}' after an object member (a bare word ends at white space; quote text with spaces: 'hello world'), found 'w'`},
		{`[1 2]`, `relaxedjson: at byte 3: expected ',' or ']' after an array element (a bare word ends at white space; quote text with spaces: 'hello world'), found '2'`},
		{`["a" b]`, `relaxedjson: at byte 5: expected ',' or ']' after an array element, found 'b'`},
		{`[a "b"]`, `relaxedjson: at byte 3: expected ',' or ']' after an array element, found '"'`},
		{`{a 1}`, `relaxedjson: at byte 3: expected ':' after an object key (a bare word ends at white space; quote text with spaces: 'hello world'), found '1'`},
		{`{a:b}x`, `relaxedjson: at byte 5: expected end of input, found 'x'`},
		{`{:1}`, `relaxedjson: at byte 1: expected an object key (a bare word or a quoted string), found ':'`},
		{`{a:}`, `relaxedjson: at byte 3: expected a value (object, array, string, number, true, false, null or a bare word), found '}'`},
		{`[a,,b]`, `relaxedjson: at byte 3: expected a value (object, array, string, number, true, false, null or a bare word), found ','`},
		{`[,]`, `relaxedjson: at byte 1: expected a value (object, array, string, number, true, false, null or a bare word), found ','`},
		{`{a:1`, `relaxedjson: at byte 4: expected ',' or '}' after an object member, found end of input`},
		{`{a:'open}`, `relaxedjson: at byte 9: expected closing ' for the string that starts at byte 3, found end of input`},
		{`{a:"x\q"}`, `relaxedjson: at byte 6: expected an escape: one of \" \' \\ \/ \b \f \n \r \t \uXXXX, found 'q'`},
		{`'\u12'`, `relaxedjson: at byte 3: expected four hex digits after \u, found '1'`},
		{`'\u12g4'`, `relaxedjson: at byte 3: expected four hex digits after \u, found '1'`},
		{`a b`, `relaxedjson: at byte 2: expected end of input (a bare word ends at white space; quote text with spaces: 'hello world'), found 'b'`},
		{`{"a":1}}`, `relaxedjson: at byte 7: expected end of input, found '}'`},
		{`{path:C:\temp}`, `relaxedjson: at byte 8: expected ',' or '}' after an object member, found '\\'`},
		{"{a:\x01}", `relaxedjson: at byte 3: expected a value (object, array, string, number, true, false, null or a bare word), found '\x01'`},
		{"[\"ok\", \xff]", `relaxedjson: at byte 7: expected valid UTF-8, found byte 0xff`},
		{`{'it''s':1}`, `relaxedjson: at byte 5: expected ':' after an object key, found '\''`},
	}
	for _, tc := range cases {
		got, err := Parse(tc.in)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %s, %v; want a *SyntaxError", tc.in, got, err)
			continue
		}
		if err.Error() != tc.msg {
			t.Errorf("Parse(%q) error\n got %s\nwant %s", tc.in, err, tc.msg)
		}
		if se.Offset < 0 || se.Offset > len(tc.in) {
			t.Errorf("Parse(%q) offset %d out of range", tc.in, se.Offset)
		}
	}
}

func TestParseDepth(t *testing.T) {
	t.Parallel()
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := Parse(ok); err != nil {
		t.Fatalf("depth %d: %v", MaxDepth, err)
	}
	// Relaxed at the limit too (the strict fast path does not apply).
	if _, err := Parse(strings.Repeat("[", MaxDepth) + "a" + strings.Repeat("]", MaxDepth)); err != nil {
		t.Fatalf("relaxed depth %d: %v", MaxDepth, err)
	}
	_, err := Parse(strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Offset != MaxDepth || !strings.Contains(err.Error(), "at most 10000 nested") {
		t.Fatalf("depth %d: err = %v", MaxDepth+1, err)
	}
}

// relaxed renders a decoded JSON value in the relaxed form: bare words
// where they keep their meaning, single quotes elsewhere.
func relaxed(v any, b *strings.Builder) {
	switch v := v.(type) {
	case map[string]any:
		b.WriteByte('{')
		first := true
		for k, e := range v {
			if !first {
				b.WriteByte(',')
			}
			first = false
			word(k, true, b)
			b.WriteString(" : ")
			relaxed(e, b)
		}
		if len(v) > 0 {
			b.WriteByte(',') // a trailing comma
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			relaxed(e, b)
		}
		b.WriteByte(']')
	case string:
		word(v, false, b)
	case json.Number:
		b.WriteString(v.String())
	case bool, nil:
		out, _ := json.Marshal(v)
		b.Write(out)
	}
}

func word(s string, key bool, b *strings.Builder) {
	bare := s != "" && utf8.ValidString(s)
	for _, r := range s {
		if !isBareRune(r) || (key && r == ':') {
			bare = false
		}
	}
	if bare && (key || (s != "true" && s != "false" && s != "null" && !isNumber(s))) {
		b.WriteString(s)
		return
	}
	b.WriteByte('\'')
	for _, r := range s {
		switch r {
		case '\'', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}

var fuzzSeeds = []string{
	`{hello:world}`,
	`{id:1,tags:[a,b],ok:true,n:null,nested:{x:1.5}}`,
	`[{id:1},{id:2}]`,
	`{"strict": ["json", 1, 2.5e3, true, null, {"k": "\u00e9"}]}`,
	`{msg:'it\'s', "x": "y\"z", url:http://a.b/c?d=e}`,
	`['\ud83d\ude00', '\ud800', "\t"]`,
	`[a,b,]`,
	`{a:1 b:2}`,
	`'unterminated`,
	"[\xff]",
	`-1.5e-7`,
	`{"a":{"b":{"c":[[[[]]]]}}}`,
}

// FuzzParse: whatever Parse returns is valid, compact JSON that parses to
// itself; strict JSON keeps its value; a strict JSON value rendered in the
// relaxed form parses back to the same value; errors are SyntaxErrors
// inside the input.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := Parse(s)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(s) {
				t.Fatalf("Parse(%q): bad error %v", s, err)
			}
			if utf8.ValidString(s) && json.Valid([]byte(s)) {
				t.Fatalf("Parse(%q) refused valid JSON: %v", s, err)
			}
			return
		}
		if !json.Valid(out) || !utf8.Valid(out) {
			t.Fatalf("Parse(%q) = %q: not valid JSON", s, out)
		}
		again, err := Parse(string(out))
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("Parse(Parse(%q)) = %s, %v; want %s", s, again, err, out)
		}
		if !json.Valid([]byte(s)) {
			return
		}
		v := decode(t, out)
		if !reflect.DeepEqual(v, decode(t, []byte(s))) {
			t.Fatalf("Parse(%q) = %s changed the value", s, out)
		}
		var b strings.Builder
		relaxed(v, &b)
		back, err := Parse(b.String())
		if err != nil {
			t.Fatalf("Parse(relaxed %q of %q): %v", b.String(), s, err)
		}
		if !reflect.DeepEqual(decode(t, back), v) {
			t.Fatalf("relaxed %q of %q parsed to %s", b.String(), s, back)
		}
	})
}
