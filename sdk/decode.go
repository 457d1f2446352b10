package sdk

import (
	"encoding/json"
	"errors"
	"time"
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

// int reads a JSON integer of up to 18 digits.
func (d *decoder) int() (int, error) {
	d.ws()
	neg := d.off < len(d.buf) && d.buf[d.off] == '-'
	if neg {
		d.off++
	}
	start, n := d.off, 0
	for d.off < len(d.buf) && d.buf[d.off] >= '0' && d.buf[d.off] <= '9' {
		n = n*10 + int(d.buf[d.off]-'0')
		d.off++
	}
	if digits := d.off - start; digits == 0 || digits > 18 || digits > 1 && d.buf[start] == '0' {
		return 0, errSlowPath
	}
	if neg {
		n = -n
	}
	return n, nil
}

// time reads a timestamp. The host writes UTC in RFC 3339 with up to nine
// digits of fraction ("2026-11-30T12:00:00.123456Z"), which parseUTC reads;
// any other form goes to time.Time's own parser (encoding/json's).
func (d *decoder) time() (time.Time, error) {
	d.ws()
	start := d.off
	s, err := d.str()
	if err != nil {
		return time.Time{}, err
	}
	if t, ok := parseUTC(s); ok {
		return t, nil
	}
	var t time.Time
	err = t.UnmarshalJSON(d.buf[start:d.off])
	return t, err
}

// parseUTC parses "2006-01-02T15:04:05Z" with an optional fraction of one
// to nine digits, for years 1 to 9999, to the time time.Time's parser
// returns for it; ok is false for anything else.
func parseUTC(s string) (t time.Time, ok bool) {
	if len(s) < len("2006-01-02T15:04:05Z") || s[4] != '-' || s[7] != '-' || s[10] != 'T' ||
		s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return time.Time{}, false
	}
	num := func(s string) int {
		n := 0
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c < '0' || c > '9' {
				ok = false
				return 0
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	ok = true
	year, month, day := num(s[0:4]), num(s[5:7]), num(s[8:10])
	hour, minute, sec := num(s[11:13]), num(s[14:16]), num(s[17:19])
	nsec := 0
	if frac := s[19 : len(s)-1]; frac != "" {
		if len(frac) < 2 || len(frac) > 10 || frac[0] != '.' {
			return time.Time{}, false
		}
		nsec = num(frac[1:])
		for range 10 - len(frac) {
			nsec *= 10
		}
	}
	if !ok || year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) ||
		hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	// Days since 1970-01-01 of the proleptic Gregorian date, counting
	// years from March so that a leap day ends its year (Howard Hinnant's
	// days_from_civil).
	y := year
	if month <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := (month + 9) % 12
	doy := (153*mp+2)/5 + day - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	days := era*146097 + doe - 719468
	return time.Unix(int64(days)*86400+int64(hour*3600+minute*60+sec), int64(nsec)).UTC(), true
}

// daysIn is the number of days of a month (1 to 12) of a year.
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// raw reads one JSON value and returns it, aliasing d.buf.
func (d *decoder) raw() (json.RawMessage, error) {
	d.ws()
	p := jsonValidator{b: d.buf, i: d.off}
	if !p.value(0) {
		return nil, errSlowPath
	}
	v := d.buf[d.off:p.i:p.i]
	d.off = p.i
	return v, nil
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

// batch reads a batch: as the host writes it (hostBatch), or else in any
// order and spacing, as long as it holds nothing unexpected.
func (d *decoder) batch(b *Batch) error {
	start := d.off
	if d.hostBatch(b) == nil {
		return nil
	}
	*b, d.off = Batch{}, start
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

// lit consumes s if the input continues with it.
func (d *decoder) lit(s string) bool {
	if len(d.buf)-d.off < len(s) || string(d.buf[d.off:d.off+len(s)]) != s {
		return false
	}
	d.off += len(s)
	return true
}

// hostBatch reads a batch in the one form the host writes
// (runtime/invocation.go): its keys in that order and no spaces. Each key
// is compared whole, which in WebAssembly costs a fraction of scanning it.
func (d *decoder) hostBatch(b *Batch) (err error) {
	if !d.lit(`{"version":`) {
		return errSlowPath
	}
	if b.Version, err = d.int(); err != nil || !d.lit(`,"function":{"name":`) {
		return errSlowPath
	}
	if b.Function.Name, err = d.str(); err != nil || !d.lit(`,"version":`) {
		return errSlowPath
	}
	if b.Function.Version, err = d.int(); err != nil || !d.lit(`},"trigger":{"type":`) {
		return errSlowPath
	}
	if b.Trigger.Type, err = d.str(); err != nil || !d.lit(`,"source":`) {
		return errSlowPath
	}
	if b.Trigger.Source, err = d.str(); err != nil || !d.lit(`},"messages":`) {
		return errSlowPath
	}
	if err = d.messages(b); err != nil || !d.lit(`}`) || d.peek() != 0 {
		return errSlowPath
	}
	return nil
}

// message reads a message: as the host writes it (hostMessage), or else
// as an object with the message's keys in any order.
func (d *decoder) message(m *Message) error {
	start := d.off
	if d.hostMessage(m) == nil {
		return nil
	}
	*m, d.off = Message{}, start
	return d.object(func(k string) (err error) {
		switch k {
		case "id":
			m.ID, err = d.str()
		case "attempt":
			m.Attempt, err = d.int()
		case "created_at":
			m.CreatedAt, err = d.time()
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

// hostMessage reads a message in the form the host writes.
func (d *decoder) hostMessage(m *Message) (err error) {
	if !d.lit(`{"id":`) {
		return errSlowPath
	}
	if m.ID, err = d.str(); err != nil || !d.lit(`,"attempt":`) {
		return errSlowPath
	}
	if m.Attempt, err = d.int(); err != nil || !d.lit(`,"created_at":`) {
		return errSlowPath
	}
	if m.CreatedAt, err = d.time(); err != nil || !d.lit(`,"headers":`) {
		return errSlowPath
	}
	if m.Headers, err = d.raw(); err != nil || !d.lit(`,"body":`) {
		return errSlowPath
	}
	if m.Body, err = d.raw(); err != nil || !d.lit(`}`) {
		return errSlowPath
	}
	return nil
}

// maxDepth bounds the nesting the fast validator follows; deeper values go
// to encoding/json.
const maxDepth = 200

// jsonValidator reads one JSON value from b at i, accepting what
// encoding/json's scanner accepts (bytes >= 0x20 inside strings, no UTF-8
// check) and refusing values nested deeper than maxDepth.
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
