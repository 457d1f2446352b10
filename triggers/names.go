package triggers

import (
	"context"
	"errors"
	"fmt"
	"regexp"
)

// Trigger names. A trigger's name is the one name every surface shows and
// every filter takes back: the TRIGGER column of `sluice invocations`,
// `sluice triggers`, `--trigger` filters, the API's trigger= parameters,
// the console, the "trigger" field of log lines and the invocation
// record's trigger column. A trigger named in a manifest or by the API
// keeps its name; one without a name gets DerivedName. Invocations no
// trigger made (POST .../functions/{name}/invoke) are recorded under
// InvokeTrigger, which no trigger may be named.

// InvokeTrigger is the name invocations of the invoke API are recorded
// (and filtered) under; it is reserved.
const InvokeTrigger = "invoke"

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.:@-]{1,200}$`)

// ErrInvalidName is wrapped by ValidateName's errors.
var ErrInvalidName = errors.New("invalid trigger name")

// ValidateName checks a trigger name: 1-200 characters from A-Z a-z 0-9
// _ . : @ -, and not the reserved InvokeTrigger.
func ValidateName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%w %q: use 1-200 characters from A-Z a-z 0-9 _ . : @ -", ErrInvalidName, truncate(name, 90))
	}
	if name == InvokeTrigger {
		return fmt.Errorf("%w %q: reserved for invocations of the invoke API", ErrInvalidName, name)
	}
	return nil
}

// Get returns the account's trigger called name, or ErrNotFound.
func (s *Store) Get(ctx context.Context, account, name string) (Trigger, error) {
	ts, err := s.List(ctx, account)
	if err != nil {
		return Trigger{}, err
	}
	for _, t := range ts {
		if t.Name == name {
			return t, nil
		}
	}
	return Trigger{}, fmt.Errorf("triggers: get %s (account %s): %w", name, account, ErrNotFound)
}

// SetEnabled enables or disables the account's trigger called name and
// reports whether that changed it; ErrNotFound when there is none. Every
// engine on the database follows within its reload interval: a disabled
// trigger stops taking work (running batches finish), an enabled one
// starts.
func (s *Store) SetEnabled(ctx context.Context, account, name string, enabled bool) (changed bool, err error) {
	var found bool
	if err := s.pool.QueryRow(ctx, s.q.Get("set_trigger_enabled"), account, name, enabled).Scan(&found, &changed); err != nil {
		return false, fmt.Errorf("triggers: set enabled=%t on %s (account %s): %w", enabled, name, account, err)
	}
	if !found {
		return false, fmt.Errorf("triggers: set enabled=%t on %s (account %s): %w", enabled, name, account, ErrNotFound)
	}
	return changed, nil
}
