package relaxedjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects Parse accepts, the
// same limit encoding/json has.
const MaxDepth = 10000

// SyntaxError describes why an input is neither strict nor relaxed JSON.
type SyntaxError struct {
	// Offset is the byte offset in the input where the problem was found.
	Offset int
	// Expected says what would have been valid there.
	Expected string
	// Found describes what is there instead: a quoted character, or "end
	// of input".
	Found string
}

// Error returns "relaxedjson: at byte N: expected X, found Y".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("relaxedjson: at byte %d: expected %s, found %s", e.Offset, e.Expected, e.Found)
}

// Parse returns s as strict, compact JSON. Strict JSON is only compacted;
// relaxed JSON (see the package documentation) is converted. A malformed
// input yields a *[SyntaxError].
func Parse(s string) (json.RawMessage, error) {
	if !utf8.ValidString(s) {
		i := 0
		for i < len(s) {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			i += size
		}
		return nil, &SyntaxError{Offset: i, Expected: "valid UTF-8", Found: fmt.Sprintf("byte 0x%02x", s[i])}
	}
	if json.Valid([]byte(s)) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(s)); err == nil {
			return buf.Bytes(), nil
		}
	}
	p := &parser{s: s}
	p.enc = json.NewEncoder(&p.out)
	p.enc.SetEscapeHTML(false)
	p.space()
	if err := p.value(); err != nil {
		return nil, err
	}
	end := p.i
	p.space()
	if p.i < len(s) {
		return nil, p.errorf("end of input" + p.spaceHint(end))
	}
	return p.out.Bytes(), nil
}

// parser converts relaxed JSON to strict JSON in one pass.
type parser struct {
	s     string
	i     int // next byte of s
	depth int
	out   bytes.Buffer
	enc   *json.Encoder // writes strings to out without HTML escaping
}

// errorf returns a SyntaxError at the current offset.
func (p *parser) errorf(expected string) error {
	return p.errorAt(p.i, expected)
}

func (p *parser) errorAt(offset int, expected string) error {
	found := "end of input"
	if offset < len(p.s) {
		r, _ := utf8.DecodeRuneInString(p.s[offset:])
		found = strconv.QuoteRune(r)
	}
	return &SyntaxError{Offset: offset, Expected: expected, Found: found}
}

func (p *parser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek returns the next byte, or 0 at the end of input.
func (p *parser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// value converts one value at p.i.
func (p *parser) value() error {
	switch p.peek() {
	case '{':
		return p.container('{', '}')
	case '[':
		return p.container('[', ']')
	}
	return p.scalar(false, "a value (object, array, string, number, true, false, null or a bare word)")
}

// scalar converts the quoted string or bare word at p.i, a value or (key)
// an object key. A bare value that is true, false, null or a number keeps
// its JSON meaning; other bare words and keys become strings.
func (p *parser) scalar(key bool, expected string) error {
	if c := p.peek(); c == '"' || c == '\'' {
		str, err := p.quoted()
		if err != nil {
			return err
		}
		p.writeString(str)
		return nil
	}
	start := p.i
	word := p.bare(key)
	switch {
	case word == "":
		return p.errorAt(start, expected)
	case !key && (word == "true" || word == "false" || word == "null" || isNumber(word)):
		p.out.WriteString(word)
	default:
		p.writeString(word)
	}
	return nil
}

// container converts an object or array whose opening byte is at p.i.
func (p *parser) container(open, close byte) error {
	if p.depth++; p.depth > MaxDepth {
		return p.errorf(fmt.Sprintf("at most %d nested arrays and objects", MaxDepth))
	}
	defer func() { p.depth-- }()
	p.out.WriteByte(open)
	p.i++
	p.space()
	if p.peek() == close {
		p.i++
		p.out.WriteByte(close)
		return nil
	}
	for n := 0; ; n++ {
		if n > 0 {
			p.out.WriteByte(',')
		}
		if open == '{' {
			if err := p.scalar(true, "an object key (a bare word or a quoted string)"); err != nil {
				return err
			}
			end := p.i
			p.space()
			if p.peek() != ':' {
				return p.errorf("':' after an object key" + p.spaceHint(end))
			}
			p.i++
			p.out.WriteByte(':')
			p.space()
		}
		if err := p.value(); err != nil {
			return err
		}
		end := p.i
		p.space()
		switch p.peek() {
		case ',':
			p.i++
			p.space()
			if p.peek() != close {
				continue
			}
			fallthrough // a trailing comma
		case close:
			p.i++
			p.out.WriteByte(close)
			return nil
		}
		if open == '{' {
			return p.errorf("',' or '}' after an object member" + p.spaceHint(end))
		}
		return p.errorf("',' or ']' after an array element" + p.spaceHint(end))
	}
}

// spaceHint explains, when a bare word ending at end is followed by white
// space and another bare word at p.i, that bare words cannot hold spaces.
func (p *parser) spaceHint(end int) string {
	if end == p.i || end == 0 || p.i >= len(p.s) {
		return ""
	}
	before, _ := utf8.DecodeLastRuneInString(p.s[:end])
	after, _ := utf8.DecodeRuneInString(p.s[p.i:])
	if !isBareRune(before) || !isBareRune(after) {
		return ""
	}
	return " (a bare word ends at white space; quote text with spaces: 'hello world')"
}

// bare consumes and returns the bare word at p.i, stopping at ':' in keys.
func (p *parser) bare(key bool) string {
	start := p.i
	for p.i < len(p.s) {
		r, size := utf8.DecodeRuneInString(p.s[p.i:])
		if !isBareRune(r) || (key && r == ':') {
			break
		}
		p.i += size
	}
	return p.s[start:p.i]
}

// isBareRune reports whether r may appear in an unquoted bare word (see the
// package documentation; keys additionally stop at ':').
func isBareRune(r rune) bool {
	switch r {
	case '{', '}', '[', ']', ',', '"', '\'', '\\', utf8.RuneError:
		return false
	}
	return !unicode.IsSpace(r) && !unicode.IsControl(r)
}

// quoted decodes the single- or double-quoted string at p.i.
func (p *parser) quoted() (string, error) {
	start := p.i
	quote := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == quote:
			p.i++
			return b.String(), nil
		case c != '\\':
			b.WriteByte(c)
			p.i++
			continue
		}
		p.i++ // the backslash
		if p.i >= len(p.s) {
			break
		}
		esc := p.s[p.i]
		p.i++
		switch esc {
		case '"', '\'', '\\', '/':
			b.WriteByte(esc)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, err := p.hex4()
			if err != nil {
				return "", err
			}
			if utf16.IsSurrogate(r) {
				r2 := unicode.ReplacementChar
				if strings.HasPrefix(p.s[p.i:], `\u`) {
					save := p.i
					p.i += 2
					lo, err := p.hex4()
					if err != nil {
						return "", err
					}
					if r2 = utf16.DecodeRune(r, lo); r2 == unicode.ReplacementChar {
						p.i = save // not a pair: the second escape stands alone
					}
				}
				r = r2
			}
			b.WriteRune(r)
		default:
			return "", p.errorAt(p.i-1, `an escape: one of \" \' \\ \/ \b \f \n \r \t \uXXXX`)
		}
	}
	return "", p.errorf(fmt.Sprintf("closing %c for the string that starts at byte %d", quote, start))
}

// hex4 decodes the four hex digits of a \u escape at p.i.
func (p *parser) hex4() (rune, error) {
	if len(p.s)-p.i < 4 {
		return 0, p.errorf(`four hex digits after \u`)
	}
	var r rune
	for _, c := range []byte(p.s[p.i : p.i+4]) {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, p.errorf(`four hex digits after \u`)
		}
		r = r<<4 | rune(d)
	}
	p.i += 4
	return r, nil
}

// writeString writes s to the output as a JSON string.
func (p *parser) writeString(s string) {
	_ = p.enc.Encode(s)             // cannot fail for a string
	p.out.Truncate(p.out.Len() - 1) // Encode's newline
}

// isNumber reports whether the bare word s is a JSON number. A bare word
// holds no white space, quotes or brackets, so if it is valid JSON and
// starts like a number it is one.
func isNumber(s string) bool {
	return s != "" && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) && json.Valid([]byte(s))
}
