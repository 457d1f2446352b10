package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Errors a host call may wrap; test them with errors.Is.
var (
	// ErrDenied: the function's manifest does not allow it (a URL not in
	// allowed_outbound_hosts, a store not in stores).
	ErrDenied = errors.New("denied")
	// ErrInvalid: malformed arguments.
	ErrInvalid = errors.New("invalid")
	// ErrLimit: a cap was hit (requests per invocation, body or value size).
	ErrLimit = errors.New("limit reached")
	// ErrFailed: the call failed (network error, timeout, store error).
	ErrFailed = errors.New("failed")
	// ErrNotFound: no such key.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a compare-and-set found another value.
	ErrConflict = errors.New("conflict")
)

var errnos = []error{nil, ErrDenied, ErrInvalid, ErrLimit, ErrFailed, ErrNotFound, ErrConflict}

// HostError is a failed host call: its errno's sentinel and the host's
// message.
type HostError struct {
	Err     error // one of the Err* sentinels
	Message string
}

func (e *HostError) Error() string { return e.Message }

// Unwrap returns the sentinel.
func (e *HostError) Unwrap() error { return e.Err }

func hostError(errno uint32, msg []byte) error {
	if errno == 0 {
		return nil
	}
	err := ErrFailed
	if int(errno) < len(errnos) {
		err = errnos[errno]
	}
	if len(msg) == 0 {
		msg = []byte("sluice host: " + err.Error())
	}
	return &HostError{Err: err, Message: string(msg)}
}

// HTTPRequest is an outbound HTTP request made through the host's
// http_request import (Function ABI v1.1). Package sdk/sdkhttp wraps Fetch
// in an *http.Client, so ordinary net/http code works too.
type HTTPRequest struct {
	Method  string              `json:"method"`
	URL     string              `json:"url"`
	Headers map[string][]string `json:"headers,omitempty"`
	Body    []byte              `json:"body,omitempty"`
}

// HTTPResponse is the host's answer to an HTTPRequest.
type HTTPResponse struct {
	Status  int                 `json:"status"`
	Headers map[string][]string `json:"headers"`
	Body    []byte              `json:"body"`
}

// Fetch makes req through the host. Only the URLs the manifest lists in
// allowed_outbound_hosts can be called; the host follows redirects (to
// allowed URLs only), and caps the time, size and count of requests.
func Fetch(req HTTPRequest) (*HTTPResponse, error) {
	doc, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("sluice http: %w", err)
	}
	errno, out := hostHTTP(doc)
	if err := hostError(errno, out); err != nil {
		return nil, err
	}
	var r HTTPResponse
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("sluice http: response document: %w", err)
	}
	return &r, nil
}

// KV is an open key-value store of the function's account.
type KV struct {
	name   string
	handle uint32
	err    error
}

// Store opens the key-value store name, which the function's manifest
// must list under stores; otherwise every call fails with ErrDenied.
func Store(name string) *KV {
	errno, h, msg := hostKVOpen(name)
	return &KV{name: name, handle: h, err: hostError(errno, msg)}
}

// Name returns the store's name.
func (s *KV) Name() string { return s.name }

// Get returns the value at key, or an error wrapping ErrNotFound.
func (s *KV) Get(key string) ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	errno, v := hostKVGet(s.handle, []byte(key))
	if err := hostError(errno, v); err != nil {
		return nil, err
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// Set stores value at key; a ttl above 0 makes it expire.
func (s *KV) Set(key string, value []byte, ttl time.Duration) error {
	if s.err != nil {
		return s.err
	}
	return hostError(hostKVSet(s.handle, []byte(key), value, ttl.Milliseconds()))
}

// Delete removes key; a missing key is an error wrapping ErrNotFound.
func (s *KV) Delete(key string) error {
	if s.err != nil {
		return s.err
	}
	return hostError(hostKVDelete(s.handle, []byte(key)))
}

// Increment adds delta to the decimal integer at key (a missing key counts
// as 0) atomically and returns the new value.
func (s *KV) Increment(key string, delta int64) (int64, error) {
	if s.err != nil {
		return 0, s.err
	}
	errno, v, msg := hostKVIncrement(s.handle, []byte(key), delta)
	return v, hostError(errno, msg)
}

// CompareAndSet sets key to value only if it holds old (old nil: only if
// the key is absent); a mismatch is an error wrapping ErrConflict. A ttl
// above 0 makes the new value expire.
func (s *KV) CompareAndSet(key string, old, value []byte, ttl time.Duration) error {
	if s.err != nil {
		return s.err
	}
	return hostError(hostKVCompareAndSet(s.handle, []byte(key), old, value, old == nil, ttl.Milliseconds()))
}
