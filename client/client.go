package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/wire"
)

// DefaultAccount is the account the client uses unless told otherwise: the
// account `sluice dev` and the SQL API act on.
const DefaultAccount = "000000000001"

// DefaultTimeout bounds each request of a client built without
// WithHTTPClient. It exceeds the longest long-poll wait (20 s).
const DefaultTimeout = 60 * time.Second

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// Client talks to one Sluice HTTP API as one access key, on one account.
// It is safe for concurrent use. Its fields group the API's calls.
type Client struct {
	// MQ is the data plane: send, receive, delete, DLQ...
	MQ *MQService
	// Queues manages queues.
	Queues *QueuesService
	// Functions manages function versions and aliases.
	Functions *FunctionsService
	// Triggers manages queue and cron triggers.
	Triggers *TriggersService
	// Invocations lists recent function invocations.
	Invocations *InvocationsService
	// Logs streams function logs and invocation outcomes.
	Logs *LogsService
	// Keys manages access keys.
	Keys *KeysService
	// Hooks manages webhook endpoints.
	Hooks *HooksService
	// Topics manages topics (fan-out) and publishes to them.
	Topics *TopicsService
	// KV reads and writes the account's key-value stores.
	KV *KVService
	// Apps reads and deletes the apps deploys made.
	Apps *AppsService

	base      *url.URL
	auth      string
	account   string
	http      *http.Client
	userAgent string
}

// Option configures a Client.
type Option func(*Client)

// WithAccount makes the client act on account (12 digits) instead of
// DefaultAccount. The key must belong to it.
func WithAccount(account string) Option {
	return func(c *Client) { c.account = account }
}

// WithHTTPClient makes the client send its requests with hc (its Timeout
// should exceed the long-poll waits you use). Without it, the client has
// its own transport keeping up to 64 idle connections to the server, and
// a DefaultTimeout per request.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.http = hc }
}

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.userAgent = ua }
}

var accountRE = regexp.MustCompile(`^[0-9]{12}$`)

// New returns a client for the API at endpoint (e.g.
// "http://127.0.0.1:8080"; a path prefix is kept) using the access key
// keyID:secret.
func New(endpoint, keyID, secret string, opts ...Option) (*Client, error) {
	if endpoint == "" {
		return nil, errors.New("client: no endpoint: pass the API's URL, e.g. http://127.0.0.1:8080")
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("client: endpoint %q: %w", endpoint, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("client: endpoint %q: want http://host[:port] or https://host[:port]", endpoint)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("client: endpoint %q: must not have a query or fragment", endpoint)
	}
	if keyID == "" || secret == "" {
		return nil, errors.New("client: no access key: pass its id and secret (create one with `sluice keys create`)")
	}
	if strings.ContainsAny(keyID, ": \t\r\n") || strings.ContainsAny(secret, " \t\r\n") {
		return nil, errors.New("client: access key: the id must not contain ':' or spaces and the secret no spaces")
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	c := &Client{
		base:      u,
		auth:      "Bearer " + keyID + ":" + secret,
		account:   DefaultAccount,
		userAgent: "sluice-go-client",
	}
	for _, o := range opts {
		o(c)
	}
	if !accountRE.MatchString(c.account) {
		return nil, fmt.Errorf("client: account %q: want 12 digits, e.g. %s", c.account, DefaultAccount)
	}
	if c.http == nil {
		// The default transport keeps 2 idle connections per host: a
		// client shared by many goroutines would keep opening new ones.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		c.http = &http.Client{Timeout: DefaultTimeout, Transport: t}
	}
	c.MQ = &MQService{c}
	c.Queues = &QueuesService{c}
	c.Functions = &FunctionsService{c}
	c.Triggers = &TriggersService{c}
	c.Invocations = &InvocationsService{c}
	c.Logs = &LogsService{c}
	c.Keys = &KeysService{c}
	c.Hooks = &HooksService{c}
	c.Topics = &TopicsService{c}
	c.KV = &KVService{c}
	c.Apps = &AppsService{c}
	return c, nil
}

// Account is the account the client acts on.
func (c *Client) Account() string { return c.account }

// Endpoint is the API's base URL.
func (c *Client) Endpoint() string { return c.base.String() }

// request is one API call.
type request struct {
	method string
	// path segments, each escaped on its own (e.g. "v1", "accounts", account, "queues", name).
	path        []string
	query       url.Values
	body        any    // encoded as JSON unless raw is set
	raw         []byte // sent as is with contentType
	contentType string
}

// managePath is the path of a management resource of the client's account.
func (c *Client) managePath(segments ...string) []string {
	return append([]string{"v1", "accounts", c.account}, segments...)
}

// queuePath is the path of a data-plane resource of queue.
func (c *Client) queuePath(queue string, segments ...string) []string {
	return append([]string{c.account, queue}, segments...)
}

// do sends r and decodes a successful response's JSON into out (when out
// is not nil and the response has a body). Non-2xx responses are *Error.
func (c *Client) do(ctx context.Context, r request, out any) error {
	u := *c.base
	var p strings.Builder
	p.WriteString(c.base.EscapedPath())
	for _, s := range r.path {
		p.WriteByte('/')
		p.WriteString(url.PathEscape(s))
	}
	u.RawPath = p.String()
	u.Path, _ = url.PathUnescape(u.RawPath)
	if len(r.query) > 0 {
		u.RawQuery = r.query.Encode()
	}
	var body io.Reader
	contentType := r.contentType
	switch {
	case r.raw != nil:
		body = bytes.NewReader(r.raw)
	case r.body != nil:
		b, err := json.Marshal(r.body)
		if err != nil {
			return fmt.Errorf("client: %s %s: encode the request: %w", r.method, u.Path, err)
		}
		body = bytes.NewReader(b)
		contentType = "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", r.method, u.Path, err)
	}
	req.Header.Set("Authorization", c.auth)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error // it repeats the method and URL
		if errors.As(err, &ue) {
			err = ue.Err
		}
		hint := ""
		if errors.Is(err, syscall.ECONNREFUSED) {
			hint = " (is the server running there?)"
		}
		return fmt.Errorf("client: %s %s: %w%s", r.method, u.Redacted(), err, hint)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return decodeError(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return nil
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("client: %s %s: read the response: %w", r.method, u.Path, err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("client: %s %s: decode the response: %w", r.method, u.Path, err)
	}
	return nil
}

// decodeError turns a non-2xx response into an *Error.
func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := errorFrom(resp.StatusCode, b)
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 && secs <= 86400 {
		e.RetryAfter = time.Duration(secs) * time.Second
	}
	return e
}

// errorFrom builds the *Error of a response with status and body: the
// API's error body, or else a summary of whatever came.
func errorFrom(status int, b []byte) *Error {
	var env wire.ErrorResponse
	e := &Error{Status: status}
	if json.Unmarshal(b, &env) == nil && env.Error.Code != "" {
		e.Code, e.Message = env.Error.Code, env.Error.Message
		if e.Message == "" {
			e.Message = e.Code
		}
		return e
	}
	e.Code = fmt.Sprintf("http_%d", status)
	text := strings.ToValidUTF8(strings.TrimSpace(string(b)), "?")
	if r := []rune(text); len(r) > 200 {
		text = string(r[:200]) + "..."
	}
	if text == "" {
		text = http.StatusText(status)
	}
	e.Message = "unexpected response: " + text
	return e
}

// listOf sends r and decodes its list response (see decodeList).
func listOf[T any](ctx context.Context, c *Client, r request, key string) ([]T, error) {
	var raw json.RawMessage
	if err := c.do(ctx, r, &raw); err != nil {
		return nil, err
	}
	return decodeList[T](raw, key)
}

// decodeList decodes a list: a bare JSON array, or an object whose field
// key holds the array. An empty body or null is an empty list.
func decodeList[T any](raw []byte, key string) ([]T, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("client: decode the %s list: %w", key, err)
		}
		raw = obj[key]
	}
	out := []T{}
	if len(raw) == 0 || string(raw) == "null" {
		return out, nil
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("client: decode the %s list: %w", key, err)
	}
	return out, nil
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// checkName refuses a queue, function, hook or trigger name the API would
// refuse, before it is put in a URL.
func checkName(kind, name string) error {
	if nameRE.MatchString(name) {
		return nil
	}
	return &Error{Code: CodeInvalidName, Message: fmt.Sprintf("%s name %q: use 1 to 80 letters, digits, '_' or '-'", kind, name)}
}

// checkRange refuses an integer argument outside [lo, hi].
func checkRange(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return invalidf("%s %d: must be %d to %d", name, v, lo, hi)
	}
	return nil
}
