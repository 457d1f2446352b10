package webhook

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sluicehq/sluice/triggers/webhook/internal/jsoncheck"
)

// MaxJSONDepth is the deepest nesting of arrays and objects a JSON body may
// have to be embedded in an [Envelope]; [NewEnvelope] rejects deeper bodies
// with [ErrBodyTooDeep].
const MaxJSONDepth = 64

// Envelope is the queue message a webhook delivery becomes, and what a
// function receives as a message body. See the package documentation for
// its JSON form.
type Envelope struct {
	// Hook is the name of the hook the request was sent to.
	Hook string
	// DeliveryID is [Delivery.ID]; empty when the request carried none.
	DeliveryID string
	// Method is the HTTP method.
	Method string
	// Path is the request's decoded URL path (r.URL.Path), without the
	// query string, which may carry tokens.
	Path string
	// Headers holds the allow-listed request headers, keyed by lower-case
	// name; repeated headers are joined with ", ".
	Headers map[string]string
	// Body is the body when it is JSON; nil otherwise.
	Body json.RawMessage
	// RawBody is the body when it is not JSON (sent as body_base64); nil
	// when Body is set.
	RawBody []byte
}

// wireEnvelope is the JSON form of an Envelope.
type wireEnvelope struct {
	Hook       string            `json:"hook"`
	DeliveryID string            `json:"delivery_id"`
	Method     string            `json:"method"`
	Path       string            `json:"path"`
	Headers    map[string]string `json:"headers"`
	Body       json.RawMessage   `json:"body,omitempty"`
	BodyBase64 *[]byte           `json:"body_base64,omitempty"`
}

// MarshalJSON encodes e in the form documented in the package
// documentation: exactly one of body and body_base64 is present, headers
// sorted by name, and a JSON body embedded compacted. MarshalJSON itself
// does not escape HTML characters; json.Marshal then escapes <, > and & in
// strings as \u003c, \u003e and \u0026 (the same JSON value) and compacts
// the whole again, so calling MarshalJSON directly is cheaper.
func (e Envelope) MarshalJSON() ([]byte, error) {
	size := 96 + len(e.Hook) + len(e.DeliveryID) + len(e.Method) + len(e.Path) + len(e.Body) + base64.StdEncoding.EncodedLen(len(e.RawBody))
	for k, v := range e.Headers {
		size += len(k) + len(v) + 6
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	buf.WriteString(`{"hook":`)
	writeString(buf, e.Hook)
	buf.WriteString(`,"delivery_id":`)
	writeString(buf, e.DeliveryID)
	buf.WriteString(`,"method":`)
	writeString(buf, e.Method)
	buf.WriteString(`,"path":`)
	writeString(buf, e.Path)
	buf.WriteString(`,"headers":{`)
	for i, k := range slices.Sorted(maps.Keys(e.Headers)) {
		if i > 0 {
			buf.WriteByte(',')
		}
		writeString(buf, k)
		buf.WriteByte(':')
		writeString(buf, e.Headers[k])
	}
	buf.WriteByte('}')
	if e.Body != nil {
		buf.WriteString(`,"body":`)
		if err := json.Compact(buf, e.Body); err != nil {
			return nil, fmt.Errorf("webhook: envelope of hook %q (delivery %q): body is not valid JSON: %w", e.Hook, e.DeliveryID, err)
		}
	} else {
		buf.WriteString(`,"body_base64":"`)
		buf.Write(base64.StdEncoding.AppendEncode(buf.AvailableBuffer(), e.RawBody))
		buf.WriteByte('"')
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// writeString writes s as a JSON string, without HTML escaping; invalid
// UTF-8 becomes U+FFFD, as encoding/json does it.
func writeString(buf *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	buf.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				buf.WriteByte('\\')
				buf.WriteByte(c)
			case c == '\n':
				buf.WriteString(`\n`)
			case c == '\r':
				buf.WriteString(`\r`)
			case c == '\t':
				buf.WriteString(`\t`)
			case c < 0x20:
				buf.WriteString(`\u00`)
				buf.WriteByte(hex[c>>4])
				buf.WriteByte(hex[c&0xf])
			default:
				buf.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			buf.WriteString(`\ufffd`)
		case r == '\u2028' || r == '\u2029':
			// Valid JSON, but not valid JavaScript source; escaped as
			// encoding/json does.
			fmt.Fprintf(buf, `\u%04x`, r)
		default:
			buf.WriteString(s[i : i+size])
		}
		i += size
	}
	buf.WriteByte('"')
}

// UnmarshalJSON decodes the form MarshalJSON produces.
func (e *Envelope) UnmarshalJSON(data []byte) error {
	var w wireEnvelope
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*e = Envelope{Hook: w.Hook, DeliveryID: w.DeliveryID, Method: w.Method, Path: w.Path, Headers: w.Headers}
	if w.Body != nil { // "body": null is a body of null
		e.Body = w.Body
	}
	if w.BodyBase64 != nil {
		e.RawBody = *w.BodyBase64
		if e.RawBody == nil {
			e.RawBody = []byte{}
		}
	}
	return nil
}

// commonHeaders are kept for every scheme.
var commonHeaders = []string{"Content-Type", "Content-Encoding", "User-Agent"}

// schemeHeaders are the id and event headers kept per scheme. Signature
// headers are never listed.
var schemeHeaders = map[Scheme][]string{
	SchemeStandard: {headerStandardID, headerStandardTimestamp},
	SchemeGitHub: {headerGitHubDelivery, headerGitHubEvent, "X-Github-Hook-Id",
		"X-Github-Hook-Installation-Target-Id", "X-Github-Hook-Installation-Target-Type"},
	SchemeStripe: nil,
	SchemeNone:   {"Idempotency-Key", headerStandardID, headerStandardTimestamp},
}

// NewEnvelope builds the envelope of a delivery d of hook received as r with
// body (the bytes read from r.Body; r.Body itself is not read). Only
// allow-listed headers are copied: Content-Type, Content-Encoding,
// User-Agent and the id and event headers of d.Scheme; never Authorization,
// Cookie or a signature header. The body is embedded as JSON when it is
// valid UTF-8 JSON, and sent as base64 otherwise; JSON nested deeper than
// [MaxJSONDepth] is rejected with an error wrapping [ErrBodyTooDeep].
func NewEnvelope(hook string, r *http.Request, body []byte, d Delivery) (*Envelope, error) {
	e := &Envelope{
		Hook:       hook,
		DeliveryID: d.ID,
		Method:     r.Method,
		Path:       r.URL.Path,
		Headers:    map[string]string{},
	}
	copyHeaders(e.Headers, r.Header, commonHeaders)
	copyHeaders(e.Headers, r.Header, schemeHeaders[d.Scheme])
	valid, depth := false, 0
	if utf8.Valid(body) {
		valid, depth = jsoncheck.Check(body)
	}
	if !valid {
		e.RawBody = bytes.Clone(body)
		if e.RawBody == nil {
			e.RawBody = []byte{}
		}
		return e, nil
	}
	if depth > MaxJSONDepth {
		return nil, errorf(ErrBodyTooDeep, "JSON body of hook %q (delivery %q) nests arrays and objects %d levels deep; expected at most %d", hook, d.ID, depth, MaxJSONDepth)
	}
	e.Body = json.RawMessage(bytes.Clone(body))
	return e, nil
}

// copyHeaders copies the named headers of src into dst under lower-case
// names.
func copyHeaders(dst map[string]string, src http.Header, names []string) {
	for _, name := range names {
		if vs := src.Values(name); len(vs) > 0 {
			dst[strings.ToLower(name)] = strings.Join(vs, ", ")
		}
	}
}
