package sdk

import (
	"encoding/json"
	"errors"
	"strconv"
	"unsafe"
)

// errSlowPath makes decodeBatch hand the input to encoding/json.
var errSlowPath = errors.New("sdk: input needs the general decoder")

// decodeBatch decodes a batch. The host always writes the same shape, which
// a small scanner reads several times faster than encoding/json (whose
// per-byte state machine is slow in WebAssembly); anything unexpected, such
// as escaped strings or unknown keys, goes to encoding/json, so the result
// is the same either way. Message headers and bodies alias one copy of in.
func decodeBatch(in []byte, b *Batch) error {
	d := decoder{buf: append([]byte(nil), in...)}
	if err := d.batch(b); err == nil {
		return nil
	}
	*b = Batch{}
	return json.Unmarshal(in, b)
}

type decoder struct {
	buf []byte
	off int
}

func (d *decoder) ws() {
	for d.off < len(d.buf) {
		switch d.buf[d.off] {
		case ' ', '\t', '\n', '\r':
			d.off++
		default:
			return
		}
	}
}

// expect consumes c after optional whitespace.
func (d *decoder) expect(c byte) error {
	d.ws()
	if d.off >= len(d.buf) || d.buf[d.off] != c {
		return errSlowPath
	}
	d.off++
	return nil
}

// peek returns the next non-space byte, 0 at the end.
func (d *decoder) peek() byte {
	d.ws()
	if d.off >= len(d.buf) {
		return 0
	}
	return d.buf[d.off]
}

// str reads a string without escapes or control characters.
func (d *decoder) str() (string, error) {
	if err := d.expect('"'); err != nil {
		return "", err
	}
	start := d.off
	for d.off < len(d.buf) {
		c := d.buf[d.off]
		switch {
		case c == '"':
			var s string
			if d.off > start {
				// d.buf is this batch's own copy and never changes.
				s = unsafe.String(&d.buf[start], d.off-start)
			}
			d.off++
			return s, nil
		case c == '\\' || c < 0x20 || c >= 0x80:
			return "", errSlowPath // escapes, and UTF-8 validation, are encoding/json's job
		}
		d.off++
	}
	return "", errSlowPath
}

// int reads a JSON integer.
func (d *decoder) int() (int, error) {
	d.ws()
	start := d.off
	if d.off < len(d.buf) && d.buf[d.off] == '-' {
		d.off++
	}
	for d.off < len(d.buf) && d.buf[d.off] >= '0' && d.buf[d.off] <= '9' {
		d.off++
	}
	n, err := strconv.Atoi(string(d.buf[start:d.off]))
	if err != nil || d.off-start > 1 && (d.buf[start] == '0' || d.buf[start] == '-' && d.buf[start+1] == '0') {
		return 0, errSlowPath
	}
	return n, nil
}

// raw skips one JSON value and returns it; the scan is shallow, so the
// value is then checked with validJSON.
func (d *decoder) raw() (json.RawMessage, error) {
	d.ws()
	start := d.off
	depth := 0
	for d.off < len(d.buf) {
		c := d.buf[d.off]
		switch c {
		case '"':
			d.off++
			for d.off < len(d.buf) && d.buf[d.off] != '"' {
				if d.buf[d.off] == '\\' {
					d.off++
				}
				d.off++
			}
			if d.off >= len(d.buf) {
				return nil, errSlowPath
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return d.finishRaw(start)
			}
			depth--
		case ',':
			if depth == 0 {
				return d.finishRaw(start)
			}
		}
		d.off++
		if depth == 0 && (c == '}' || c == ']' || c == '"') {
			return d.finishRaw(start)
		}
	}
	return d.finishRaw(start)
}

func (d *decoder) finishRaw(start int) (json.RawMessage, error) {
	v := d.buf[start:d.off]
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\n' || v[len(v)-1] == '\t' || v[len(v)-1] == '\r') {
		v = v[:len(v)-1]
	}
	if len(v) == 0 || !validJSON(v) {
		return nil, errSlowPath
	}
	if string(v) == "null" {
		return json.RawMessage("null"), nil
	}
	return v[:len(v):len(v)], nil
}

// next advances to the next key of an object whose '{' was consumed
// (first reports whether none was read yet): it returns the key and
// consumes the ':', or reports the end of the object.
func (d *decoder) next(first bool) (key string, more bool, err error) {
	switch d.peek() {
	case '}':
		d.off++
		return "", false, nil
	case ',':
		if first {
			return "", false, errSlowPath
		}
		d.off++
	default:
		if !first {
			return "", false, errSlowPath
		}
	}
	if key, err = d.str(); err != nil {
		return "", false, err
	}
	return key, true, d.expect(':')
}

// object reads an object, calling field with each key; field consumes the
// value. field does not escape, so its closure costs no allocation.
func (d *decoder) object(field func(key string) error) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	for first := true; ; first = false {
		k, more, err := d.next(first)
		if err != nil || !more {
			return err
		}
		if err := field(k); err != nil {
			return err
		}
	}
}

func (d *decoder) batch(b *Batch) error {
	seen := 0
	err := d.object(func(k string) (err error) {
		seen++
		switch k {
		case "version":
			b.Version, err = d.int()
		case "function":
			err = d.object(func(k string) (err error) {
				switch k {
				case "name":
					b.Function.Name, err = d.str()
				case "version":
					b.Function.Version, err = d.int()
				default:
					err = errSlowPath
				}
				return err
			})
		case "trigger":
			err = d.object(func(k string) (err error) {
				switch k {
				case "type":
					b.Trigger.Type, err = d.str()
				case "source":
					b.Trigger.Source, err = d.str()
				default:
					err = errSlowPath
				}
				return err
			})
		case "messages":
			err = d.messages(b)
		default:
			err = errSlowPath
		}
		return err
	})
	if err != nil || seen != 4 || d.peek() != 0 {
		return errSlowPath
	}
	return nil
}

// minMessageBytes is the length of the shortest message the host writes,
// {"id":"1","attempt":1,"created_at":"2026-11-30T12:00:00Z","headers":null,"body":1}
// less a few bytes.
const minMessageBytes = 64

func (d *decoder) messages(b *Batch) error {
	if err := d.expect('['); err != nil {
		return err
	}
	// Room for as many messages as the rest of the input could hold, at
	// most 16 (append grows it beyond): a message the host writes takes
	// at least minMessageBytes, and a batch of one should not allocate
	// sixteen.
	b.Messages = make([]Message, 0, min(16, (len(d.buf)-d.off)/minMessageBytes+1))
	if d.peek() == ']' {
		d.off++
		return nil
	}
	for {
		b.Messages = append(b.Messages, Message{})
		if err := d.message(&b.Messages[len(b.Messages)-1]); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.off++
		case ']':
			d.off++
			return nil
		default:
			return errSlowPath
		}
	}
}

func (d *decoder) message(m *Message) error {
	return d.object(func(k string) (err error) {
		switch k {
		case "id":
			m.ID, err = d.str()
		case "attempt":
			m.Attempt, err = d.int()
		case "created_at":
			d.ws()
			start := d.off
			if _, err = d.str(); err == nil {
				// The same parser encoding/json uses.
				err = m.CreatedAt.UnmarshalJSON(d.buf[start:d.off])
			}
		case "headers":
			m.Headers, err = d.raw()
		case "body":
			m.Body, err = d.raw()
		default:
			err = errSlowPath
		}
		return err
	})
}

// maxDepth bounds the nesting the fast validator follows; deeper values go
// to encoding/json.
const maxDepth = 200

// validJSON reports whether v is exactly one JSON value, accepting what
// encoding/json's scanner accepts (bytes >= 0x20 inside strings, no UTF-8
// check). It may reject valid but deeply nested input; callers then fall
// back to encoding/json.
func validJSON(v []byte) bool {
	p := jsonValidator{b: v}
	p.ws()
	if !p.value(0) {
		return false
	}
	p.ws()
	return p.i == len(p.b)
}

type jsonValidator struct {
	b []byte
	i int
}

func (p *jsonValidator) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *jsonValidator) value(depth int) bool {
	if p.i >= len(p.b) || depth > maxDepth {
		return false
	}
	switch c := p.b[p.i]; {
	case c == '{' || c == '[':
		return p.container(depth, c == '{')
	case c == '"':
		return p.string()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	}
	return false
}

// container reads an object or array (its opening byte is at p.i).
func (p *jsonValidator) container(depth int, object bool) bool {
	end := byte(']')
	if object {
		end = '}'
	}
	p.i++
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == end {
		p.i++
		return true
	}
	for {
		p.ws()
		if object {
			if p.i >= len(p.b) || p.b[p.i] != '"' || !p.string() {
				return false
			}
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return false
			}
			p.i++
			p.ws()
		}
		if !p.value(depth + 1) {
			return false
		}
		p.ws()
		if p.i >= len(p.b) {
			return false
		}
		if p.b[p.i] == end {
			p.i++
			return true
		}
		if p.b[p.i] != ',' {
			return false
		}
		p.i++
	}
}

func (p *jsonValidator) literal(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

func (p *jsonValidator) string() bool {
	p.i++ // the opening quote
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			p.i++
			if p.i >= len(p.b) {
				return false
			}
			switch p.b[p.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i++
			case 'u':
				if len(p.b)-p.i < 5 {
					return false
				}
				for _, h := range p.b[p.i+1 : p.i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				p.i += 5
			default:
				return false
			}
		default:
			p.i++
		}
	}
	return false
}

func (p *jsonValidator) digits() bool {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

func (p *jsonValidator) number() bool {
	if p.b[p.i] == '-' {
		p.i++
	}
	if p.i >= len(p.b) {
		return false
	}
	if p.b[p.i] == '0' {
		p.i++
	} else if !p.digits() {
		return false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if !p.digits() {
			return false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if !p.digits() {
			return false
		}
	}
	return true
}
