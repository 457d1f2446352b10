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
}

// ErrInvalid marks output that is not valid ABI output.
var ErrInvalid = errors.New("invalid output")

// ParseOutput decodes a function's output. Empty or all-blank output (and
// a JSON null) means no failures. Negative retry delays become 0 and long
// ones are capped at MaxRetryAfterSeconds; error texts are cut at
// MaxErrorBytes. Errors wrap ErrInvalid.
func ParseOutput(out []byte) ([]Failure, error) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return nil, nil
	}
	if out[0] != '{' && !bytes.Equal(out, []byte("null")) {
		return nil, fmt.Errorf("%w: not a JSON object: %s", ErrInvalid, Snippet(out))
	}
	var w wireOutput
	if err := json.Unmarshal(out, &w); err != nil {
		return nil, fmt.Errorf("%w: %v: %s", ErrInvalid, err, Snippet(out))
	}
	if len(w.BatchItemFailures) == 0 {
		return nil, nil
	}
	fs := make([]Failure, 0, len(w.BatchItemFailures))
	for i, f := range w.BatchItemFailures {
		if f.ItemIdentifier == nil || *f.ItemIdentifier == "" {
			return nil, fmt.Errorf("%w: batchItemFailures[%d] lacks itemIdentifier", ErrInvalid, i)
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
	return fs, nil
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
