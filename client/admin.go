package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/wire"
)

// TriggersService manages the triggers of the client's account (scope
// mq:admin).
type TriggersService struct{ c *Client }

// Trigger runs a function on batches of a queue (or its DLQ), or on a
// cron schedule. Kind is "queue" or "cron". Fields left zero in a Put take
// the server's defaults; nil LeaseExtension and Enabled mean true. List
// fills every field, UpdatedAt included.
type Trigger = wire.Trigger

// List returns the account's triggers.
func (s *TriggersService) List(ctx context.Context) ([]Trigger, error) {
	return listOf[Trigger](ctx, s.c, request{method: http.MethodGet, path: s.c.managePath("triggers")}, "triggers")
}

// Bool returns a pointer to v, for Trigger.
func Bool(v bool) *bool { return &v }

var triggerNameRE = regexp.MustCompile(`^[A-Za-z0-9_.:@-]{1,200}$`)

func checkTriggerName(name string) error {
	if triggerNameRE.MatchString(name) {
		return nil
	}
	return &Error{Code: CodeInvalidName, Message: fmt.Sprintf("trigger name %q: use 1 to 200 letters, digits or _.:@-", name)}
}

// Put creates or replaces trigger t (by t.Name) and reports whether
// anything changed. Source is "api" unless set to "manifest" (what
// `sluice deploy` owns and may remove).
func (s *TriggersService) Put(ctx context.Context, t Trigger) (changed bool, err error) {
	if err := checkTriggerName(t.Name); err != nil {
		return false, err
	}
	// What the server sets is not sent back, so a listed trigger can be
	// changed and put again.
	t.UpdatedAt = time.Time{}
	var out wire.PutTriggerResult
	err = s.c.do(ctx, request{method: http.MethodPut, path: s.c.managePath("triggers", t.Name), body: t}, &out)
	return out.Changed, err
}

// Delete deletes trigger name.
func (s *TriggersService) Delete(ctx context.Context, name string) error {
	if err := checkTriggerName(name); err != nil {
		return err
	}
	return s.c.do(ctx, request{method: http.MethodDelete, path: s.c.managePath("triggers", name)}, nil)
}

// Get returns trigger name; ErrNotFound when the account has none so
// called (or the key may not see it).
func (s *TriggersService) Get(ctx context.Context, name string) (Trigger, error) {
	var out Trigger
	if err := checkTriggerName(name); err != nil {
		return out, err
	}
	err := s.c.do(ctx, request{method: http.MethodGet, path: s.c.managePath("triggers", name)}, &out)
	return out, err
}

// Enable enables trigger name and reports whether it was disabled. Every
// server on the database starts running it within its reload interval.
func (s *TriggersService) Enable(ctx context.Context, name string) (changed bool, err error) {
	return s.setEnabled(ctx, name, "enable")
}

// Disable disables trigger name and reports whether it was enabled. Every
// server on the database stops taking batches for it within its reload
// interval; running batches finish.
func (s *TriggersService) Disable(ctx context.Context, name string) (changed bool, err error) {
	return s.setEnabled(ctx, name, "disable")
}

func (s *TriggersService) setEnabled(ctx context.Context, name, verb string) (bool, error) {
	if err := checkTriggerName(name); err != nil {
		return false, err
	}
	var out wire.SetTriggerEnabledResult
	err := s.c.do(ctx, request{method: http.MethodPost, path: s.c.managePath("triggers", name, verb)}, &out)
	return out.Changed, err
}

// InvocationsService reads the invocation log (scope mq:admin).
type InvocationsService struct{ c *Client }

// Invocation is one run of a function on one batch. Its Outcome is
// success, partial_failure or failure; Trigger is the name it was recorded
// under (the trigger's name, or "invoke" for Functions.Invoke), which
// InvocationsOptions.Trigger takes back; TriggerID is nil when no trigger
// made it.
type Invocation = wire.Invocation

// InvocationsOptions filter Invocations.List.
type InvocationsOptions struct {
	Function string
	// Outcome is success, partial_failure or failure.
	Outcome string
	// Trigger keeps the invocations of the trigger with this name.
	Trigger string
	// Since keeps invocations started at or after it.
	Since time.Time
	// Until keeps invocations started before it.
	Until time.Time
	// BeforeID keeps invocations whose id is below it: pass the last id of
	// one page to get the next.
	BeforeID int64
	// Limit caps the result (1 to 1000; 0: 50).
	Limit int
}

// List returns recent invocations, newest (highest id) first.
func (s *InvocationsService) List(ctx context.Context, opts ...InvocationsOptions) ([]Invocation, error) {
	o := lastOf(opts)
	q := url.Values{}
	if o.Function != "" {
		if err := checkName("function", o.Function); err != nil {
			return nil, err
		}
		q.Set("function", o.Function)
	}
	switch o.Outcome {
	case "", "success", "partial_failure", "failure":
	default:
		return nil, invalidf("outcome %q: use success, partial_failure or failure", o.Outcome)
	}
	if o.Outcome != "" {
		q.Set("outcome", o.Outcome)
	}
	if o.Trigger != "" {
		q.Set("trigger", o.Trigger)
	}
	if !o.Since.IsZero() {
		q.Set("since", o.Since.UTC().Format(time.RFC3339Nano))
	}
	if !o.Until.IsZero() {
		q.Set("until", o.Until.UTC().Format(time.RFC3339Nano))
	}
	if o.BeforeID < 0 {
		return nil, invalidf("before_id %d: must be positive", o.BeforeID)
	}
	if o.BeforeID > 0 {
		q.Set("before_id", strconv.FormatInt(o.BeforeID, 10))
	}
	if o.Limit != 0 {
		if err := checkRange("limit", o.Limit, 1, 1000); err != nil {
			return nil, err
		}
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return listOf[Invocation](ctx, s.c, request{method: http.MethodGet, path: s.c.managePath("invocations"), query: q}, "invocations")
}

// Get returns one invocation by id; ErrNotFound when the account has none
// with that id.
func (s *InvocationsService) Get(ctx context.Context, id int64) (Invocation, error) {
	var out Invocation
	if id < 1 {
		return out, invalidf("invocation id %d: must be positive", id)
	}
	err := s.c.do(ctx, request{method: http.MethodGet, path: s.c.managePath("invocations", strconv.FormatInt(id, 10))}, &out)
	return out, err
}

// KeysService manages the account's access keys (scope mq:admin).
type KeysService struct{ c *Client }

// Key is an access key (never its secret); RevokedAt is nil while it is
// valid.
type Key = wire.Key

// KeyOptions describe a key to create: the Scopes it grants (e.g.
// "mq:send", "mq:*", "functions:deploy"), the queue-name patterns it is
// limited to (path.Match syntax, e.g. "orders-*"; nil: every queue), and
// a description.
type KeyOptions = wire.CreateKeyRequest

// NewKey is a created key with its secret, which is shown only once. Its
// String is the key as SLUICE_KEY and `sluice login --key` take it.
type NewKey = wire.NewKey

// List returns the account's keys, revoked ones included.
func (s *KeysService) List(ctx context.Context) ([]Key, error) {
	return listOf[Key](ctx, s.c, request{method: http.MethodGet, path: s.c.managePath("keys")}, "keys")
}

// Create creates a key.
func (s *KeysService) Create(ctx context.Context, o KeyOptions) (NewKey, error) {
	var out NewKey
	if len(o.Scopes) == 0 {
		return out, invalidf("key: give it at least one scope, e.g. mq:send")
	}
	err := s.c.do(ctx, request{method: http.MethodPost, path: s.c.managePath("keys"), body: o}, &out)
	return out, err
}

// Revoke revokes key id; requests with it fail from then on (after the
// server's short key cache expires).
func (s *KeysService) Revoke(ctx context.Context, id string) error {
	if id == "" {
		return invalidf("key id: empty")
	}
	return s.c.do(ctx, request{method: http.MethodDelete, path: s.c.managePath("keys", id)}, nil)
}

// HooksService manages the account's webhook endpoints (scope mq:admin).
type HooksService struct{ c *Client }

// Hook turns signed webhook deliveries to POST /hooks/{account}/{name}
// into messages of Queue. Verify is the signature scheme: standard,
// github, stripe or none. Secrets are only sent: List never returns them,
// only SecretCount.
type Hook = wire.Hook

// List returns the account's hooks.
func (s *HooksService) List(ctx context.Context) ([]Hook, error) {
	return listOf[Hook](ctx, s.c, request{method: http.MethodGet, path: s.c.managePath("hooks")}, "hooks")
}

// Create creates hook h, or replaces the hook of that name, and reports
// whether it was created. The queue must exist.
func (s *HooksService) Create(ctx context.Context, h Hook) (created bool, err error) {
	if err := checkName("hook", h.Name); err != nil {
		return false, err
	}
	if err := checkName("queue", h.Queue); err != nil {
		return false, err
	}
	switch h.Verify {
	case "standard", "github", "stripe":
		if len(h.Secrets) == 0 {
			return false, invalidf("hook %s: verify %s needs a secret", h.Name, h.Verify)
		}
	case "none":
	default:
		return false, invalidf("hook %s: verify %q: use standard, github, stripe or none", h.Name, h.Verify)
	}
	body := wire.CreateHookRequest{Name: h.Name, Queue: h.Queue, Verify: h.Verify, Secrets: h.Secrets, Source: h.Source}
	var out wire.CreateHookResult
	err = s.c.do(ctx, request{method: http.MethodPost, path: s.c.managePath("hooks"), body: body}, &out)
	return out.Created, err
}

// Delete deletes hook name.
func (s *HooksService) Delete(ctx context.Context, name string) error {
	if err := checkName("hook", name); err != nil {
		return err
	}
	return s.c.do(ctx, request{method: http.MethodDelete, path: s.c.managePath("hooks", name)}, nil)
}
