package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
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
	// Path is the request path, without the query string.
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
// documentation: exactly one of body and body_base64 is present, and a JSON
// body is embedded compacted. MarshalJSON itself does not escape HTML
// characters; json.Marshal then escapes <, > and & in strings as \u003c,
// \u003e and \u0026 (the same JSON value), an Encoder with
// SetEscapeHTML(false) does not.
func (e Envelope) MarshalJSON() ([]byte, error) {
	w := wireEnvelope{Hook: e.Hook, DeliveryID: e.DeliveryID, Method: e.Method, Path: e.Path, Headers: e.Headers}
	if w.Headers == nil {
		w.Headers = map[string]string{}
	}
	if e.Body != nil {
		w.Body = e.Body
	} else {
		raw := e.RawBody
		if raw == nil {
			raw = []byte{}
		}
		w.BodyBase64 = &raw
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// UnmarshalJSON decodes the form MarshalJSON produces.
func (e *Envelope) UnmarshalJSON(data []byte) error {
	var w wireEnvelope
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*e = Envelope{Hook: w.Hook, DeliveryID: w.DeliveryID, Method: w.Method, Path: w.Path, Headers: w.Headers}
	if w.Body != nil && !bytes.Equal(w.Body, []byte("null")) {
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
