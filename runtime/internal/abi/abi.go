// Package abi encodes and decodes the JSON of the Sluice Function ABI v1:
// the batch a function reads and the output it writes.
package abi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxRetryAfterSeconds caps a requested retry delay (12 hours, the longest
// visibility timeout queues accept).
const MaxRetryAfterSeconds = 12 * 60 * 60

// MaxErrorBytes caps the error text kept for one failed message.
const MaxErrorBytes = 4096

// Failure is one entry of batchItemFailures.
type Failure struct {
	ID                string
	RetryAfterSeconds int
	Permanent         bool
	Error             string
}

type wireFailure struct {
	ItemIdentifier    *string `json:"itemIdentifier"`
	RetryAfterSeconds *int64  `json:"retryAfterSeconds"`
	Permanent         bool    `json:"permanent"`
	Error             string  `json:"error"`
}

type wireOutput struct {
	BatchItemFailures []wireFailure `json:"batchItemFailures"`
	Emit              []wireEmit    `json:"emit"`
}

// Emit is one entry of emit (ABI v1.1): a message to send to a queue, or
// to publish to a topic, when the batch settles.
type Emit struct {
	Queue, Topic string
	Body         json.RawMessage
	Headers      json.RawMessage // nil when absent or null
	DelaySeconds int
	DedupKey     string
	Group        string
	For          string
}

type wireEmit struct {
	Queue        *string         `json:"queue"`
	Topic        *string         `json:"topic"`
	Body         json.RawMessage `json:"body"`
	Headers      json.RawMessage `json:"headers"`
	DelaySeconds *int64          `json:"delay_seconds"`
	DedupKey     *string         `json:"dedup_key"`
	Group        *string         `json:"group"`
	For          *string         `json:"for"`
}

// MaxEmits caps the emit entries of one output document.
const MaxEmits = 1000

// Output is a decoded output document.
type Output struct {
	Failures []Failure
	Emits    []Emit
}

// ErrInvalid marks output that is not valid ABI output.
var ErrInvalid = errors.New("invalid output")

// ParseOutput decodes a function's output and returns its failures. See
// Parse.
func ParseOutput(out []byte) ([]Failure, error) {
	o, err := Parse(out)
	return o.Failures, err
}

// Parse decodes a function's output. Empty or all-blank output (and a JSON
// null) means no failures and no emits. Negative retry delays become 0 and
// long ones are capped at MaxRetryAfterSeconds; error texts are cut at
// MaxErrorBytes. An emit entry must name exactly one of queue and topic
// and carry a body; a topic emit takes no delay_seconds, dedup_key or
// group. Errors wrap ErrInvalid
// and name the entry.
func Parse(out []byte) (Output, error) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return Output{}, nil
	}
	if out[0] != '{' && !bytes.Equal(out, []byte("null")) {
		return Output{}, fmt.Errorf("%w: not a JSON object: %s", ErrInvalid, Snippet(out))
	}
	var w wireOutput
	if err := json.Unmarshal(out, &w); err != nil {
		return Output{}, fmt.Errorf("%w: %v: %s", ErrInvalid, err, Snippet(out))
	}
	var o Output
	if len(w.Emit) > 0 {
		emits, err := parseEmits(w.Emit)
		if err != nil {
			return Output{}, err
		}
		o.Emits = emits
	}
	if len(w.BatchItemFailures) == 0 {
		return o, nil
	}
	fs := make([]Failure, 0, len(w.BatchItemFailures))
	for i, f := range w.BatchItemFailures {
		if f.ItemIdentifier == nil || *f.ItemIdentifier == "" {
			return Output{}, fmt.Errorf("%w: batchItemFailures[%d] lacks itemIdentifier", ErrInvalid, i)
		}
		var after int
		if f.RetryAfterSeconds != nil {
			switch s := *f.RetryAfterSeconds; {
			case s < 0:
			case s > MaxRetryAfterSeconds:
				after = MaxRetryAfterSeconds
			default:
				after = int(s)
			}
		}
		fs = append(fs, Failure{ID: *f.ItemIdentifier, RetryAfterSeconds: after, Permanent: f.Permanent, Error: Truncate(f.Error, MaxErrorBytes)})
	}
	o.Failures = fs
	return o, nil
}

func parseEmits(ws []wireEmit) ([]Emit, error) {
	if len(ws) > MaxEmits {
		return nil, fmt.Errorf("%w: %d emit entries, over the limit of %d", ErrInvalid, len(ws), MaxEmits)
	}
	es := make([]Emit, len(ws))
	for i, w := range ws {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: emit[%d]: %s", ErrInvalid, i, fmt.Sprintf(format, args...))
		}
		e := &es[i]
		switch {
		case w.Queue != nil && w.Topic != nil:
			return nil, bad("names both a queue and a topic; name one")
		case w.Queue != nil:
			if *w.Queue == "" {
				return nil, bad("empty queue name")
			}
			e.Queue = *w.Queue
		case w.Topic != nil:
			if *w.Topic == "" {
				return nil, bad("empty topic name")
			}
			e.Topic = *w.Topic
		default:
			return nil, bad("names neither a queue nor a topic")
		}
		if len(w.Body) == 0 {
			return nil, bad("lacks a body")
		}
		e.Body = w.Body
		if len(w.Headers) > 0 && !bytes.Equal(w.Headers, []byte("null")) {
			if w.Headers[0] != '{' {
				return nil, bad("headers is not a JSON object")
			}
			e.Headers = w.Headers
		}
		if w.DelaySeconds != nil {
			if s := *w.DelaySeconds; s < 0 || s > MaxRetryAfterSeconds {
				return nil, bad("delay_seconds %d out of range 0..%d", s, MaxRetryAfterSeconds)
			}
			e.DelaySeconds = int(*w.DelaySeconds)
		}
		if w.DedupKey != nil {
			if n := len(*w.DedupKey); n < 1 || n > 128 {
				return nil, bad("dedup_key of %d characters; use 1 to 128", n)
			}
			e.DedupKey = *w.DedupKey
		}
		if w.Group != nil {
			if n := len(*w.Group); n < 1 || n > 128 {
				return nil, bad("group of %d characters; use 1 to 128", n)
			}
			e.Group = *w.Group
		}
		if e.Topic != "" && (e.DelaySeconds != 0 || e.DedupKey != "" || e.Group != "") {
			return nil, bad("a topic emit takes no delay_seconds, dedup_key or group")
		}
		if w.For != nil {
			if *w.For == "" {
				return nil, bad("empty for")
			}
			e.For = *w.For
		}
	}
	return es, nil
}

// Snippet returns the start of b, fit for an error message.
func Snippet(b []byte) string {
	const n = 80
	if len(b) <= n {
		return string(b)
	}
	return Truncate(string(b), n)
}

// Truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

const hex = "0123456789abcdef"

// AppendString appends s to dst as a JSON string. Invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
