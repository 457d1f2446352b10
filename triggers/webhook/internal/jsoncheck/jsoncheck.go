// Package jsoncheck validates JSON text and measures how deeply it nests,
// in one pass and without the 10000-level cap of encoding/json, so that a
// too-deep document can be told apart from text that is not JSON at all.
package jsoncheck

// Check reports whether b is one JSON value (RFC 8259 grammar, surrounded
// by optional whitespace) and the deepest nesting of arrays and objects in
// it: 0 for a scalar, 1 for [] or {}, and so on. Like encoding/json.Valid
// it does not check that strings are valid UTF-8. depth is meaningful only
// when valid is true.
func Check(b []byte) (valid bool, depth int) {
	var buf [64]byte
	stack := buf[:0] // open containers, '[' or '{'
	i := skipSpace(b, 0)
	for {
		// b[i:] must start with a value.
		if i >= len(b) {
			return false, 0
		}
		ok := true
		switch c := b[i]; {
		case c == '{' || c == '[':
			stack = append(stack, c)
			depth = max(depth, len(stack))
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == closer(c) {
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i, ok = key(b, i); !ok {
					return false, 0
				}
			}
			continue // to the first element's value
		case c == '"':
			i, ok = str(b, i)
		case c == '-' || (c >= '0' && c <= '9'):
			i, ok = number(b, i)
		case c == 't':
			i, ok = literal(b, i, "true")
		case c == 'f':
			i, ok = literal(b, i, "false")
		case c == 'n':
			i, ok = literal(b, i, "null")
		default:
			return false, 0
		}
		if !ok {
			return false, 0
		}
		// After a value: close containers, or move to the next element.
		for {
			i = skipSpace(b, i)
			if len(stack) == 0 {
				return i == len(b), depth
			}
			if i >= len(b) {
				return false, 0
			}
			top := stack[len(stack)-1]
			if b[i] == closer(top) {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false, 0
			}
			i = skipSpace(b, i+1)
			if top == '{' {
				if i, ok = key(b, i); !ok {
					return false, 0
				}
			}
			break
		}
	}
}

func closer(open byte) byte {
	if open == '{' {
		return '}'
	}
	return ']'
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// key scans an object key and its colon at b[i:], returning the index of
// the value that follows (after whitespace).
func key(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	i, ok := str(b, i)
	if !ok {
		return 0, false
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	return skipSpace(b, i+1), true
}

// str scans the string starting at the quote b[i].
func str(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			i++
			if i >= len(b) {
				return 0, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return 0, false
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return 0, false
					}
				}
				i += 4
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at b[i:].
func number(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}
