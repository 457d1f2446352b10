// Package jsonbody checks untrusted JSON request bodies before they are
// decoded: one value, valid UTF-8, nesting bounded, nothing after it.
package jsonbody

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Errors Check returns, wrapped with details.
var (
	ErrEmpty       = errors.New("empty body")
	ErrInvalidUTF8 = errors.New("not valid UTF-8")
	ErrTooDeep     = errors.New("nested too deeply")
	ErrSyntax      = errors.New("not valid JSON")
)

// Check reports whether data is exactly one JSON value (surrounding
// whitespace allowed) in valid UTF-8, with arrays and objects nested at most
// maxDepth levels. Its errors wrap one of the Err values and say where.
func Check(data []byte, maxDepth int) error {
	if len(data) == 0 {
		return ErrEmpty
	}
	if !utf8.Valid(data) {
		for i := 0; i < len(data); {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 {
				return fmt.Errorf("%w: invalid byte at offset %d", ErrInvalidUTF8, i)
			}
			i += n
		}
	}
	depth, inString, escaped := 0, false, false
	for i, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth > maxDepth {
				return fmt.Errorf("%w: more than %d levels of arrays and objects at offset %d", ErrTooDeep, maxDepth, i)
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	if !json.Valid(data) {
		// Decode for the position and reason of the first error.
		var v any
		err := json.Unmarshal(data, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("%w: %s at offset %d", ErrSyntax, se.Error(), se.Offset)
		}
		return ErrSyntax
	}
	return nil
}
