package server

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/triggers"
	"github.com/sluicehq/sluice/wire"
)

// Queue-limited keys (see SECURITY.md): a key may read, change or delete a
// resource only if every queue the resource touches, before and after the
// change, matches its patterns. A resource that touches no queue (a cron
// trigger that invokes a function, an invocation no live trigger started)
// is account-wide: only keys not limited in queues reach it.

// allQueues reports whether the key is not limited in queues.
func (k *keyRecord) allQueues() bool { return slices.Contains(k.queues, "*") }

// allowsQueues reports whether every queue in qs matches the key's
// patterns; an empty list means the resource is account-wide.
func (k *keyRecord) allowsQueues(qs []string) bool {
	if k.allQueues() {
		return true
	}
	if len(qs) == 0 {
		return false
	}
	for _, q := range qs {
		if !k.allowsQueue(q) {
			return false
		}
	}
	return true
}

// covers reports whether the key holds every scope and queue pattern of
// other: only then may it revoke (or see) other.
func (k *keyRecord) covers(scopes, queues []string) bool {
	for _, sc := range scopes {
		if !k.allows(sc) {
			return false
		}
	}
	return k.coversPatterns(queues)
}

// coversPatterns reports whether each pattern is one of the key's own
// (or the key has "*"), the rule a key creation follows too.
func (k *keyRecord) coversPatterns(queues []string) bool {
	if k.allQueues() {
		return true
	}
	for _, p := range queues {
		if !slices.Contains(k.queues, p) {
			return false
		}
	}
	return true
}

// forbidQueues is the 403 of a key that may not touch what a resource
// touches.
func (c *call) forbidQueues(what string) error {
	return errorf(http.StatusForbidden, "forbidden", "access key %s is limited to queues %s and may not act on %s",
		c.key.id, strings.Join(c.key.queues, ", "), what)
}

// triggerQueues are the queues a trigger touches: the queue it reads or,
// for a cron trigger, the queue it enqueues to. A cron trigger that
// invokes a function touches no queue: it is account-wide, whatever queue
// it names.
func triggerQueues(t triggers.Trigger) []string {
	if t.Queue == "" || (t.Kind == triggers.KindCron && t.Function != "") {
		return nil
	}
	return []string{t.Queue}
}

// accountWide is the 403 of a key limited to some queues acting on what
// serves the whole account (functions, apps, the metrics of every queue).
func (c *call) accountWide(what string) error {
	if c.key.allQueues() {
		return nil
	}
	return errorf(http.StatusForbidden, "forbidden", "access key %s is limited to queues %s: %s the whole account, use a key for every queue",
		c.key.id, strings.Join(c.key.queues, ", "), what)
}

// findTrigger returns the account's trigger named name, found false if
// there is none.
func (a *api) findTrigger(ctx context.Context, account, name string) (triggers.Trigger, bool, error) {
	ts, err := a.s.triggers.List(ctx, account)
	if err != nil {
		return triggers.Trigger{}, false, err
	}
	for _, t := range ts {
		if t.Name == name {
			return t, true, nil
		}
	}
	return triggers.Trigger{}, false, nil
}

// invocationQueues maps the account's trigger ids to the queues they
// touch, for filtering invocations; nil when the key sees everything.
func (a *api) invocationQueues(ctx context.Context, c *call) (map[int64][]string, error) {
	if c.key.allQueues() {
		return nil, nil
	}
	ts, err := a.s.triggers.List(ctx, c.account)
	if err != nil {
		return nil, err
	}
	m := make(map[int64][]string, len(ts))
	for _, t := range ts {
		m[t.ID] = triggerQueues(t)
	}
	return m, nil
}

// allowsInvocation reports whether the key may see v, by the queues of
// the trigger that started it (byTrigger from invocationQueues).
func (c *call) allowsInvocation(v wire.Invocation, byTrigger map[int64][]string) bool {
	if c.key.allQueues() {
		return true
	}
	if v.TriggerID == nil {
		return false
	}
	return c.key.allowsQueues(byTrigger[*v.TriggerID])
}

// strconvQuote quotes a name for an error message, truncated.
func strconvQuote(s string) string { return strconv.Quote(truncate(s, 90)) }
