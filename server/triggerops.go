package server

import (
	"net/http"

	"github.com/sluicehq/sluice/wire"
)

// getTrigger answers GET .../triggers/{name}: one trigger, every setting
// written (scope mq:admin; a queue-limited key sees only the triggers of
// its queues).
func (a *api) getTrigger(w http.ResponseWriter, r *http.Request, c *call) error {
	name := r.PathValue("name")
	t, found, err := a.findTrigger(r.Context(), c.account, name)
	if err != nil {
		return err
	}
	if !found || !c.key.allowsQueues(triggerQueues(t)) {
		return errorf(http.StatusNotFound, "not_found", "trigger %q not found in account %s", truncate(name, 90), c.account)
	}
	writeJSON(w, http.StatusOK, toTriggerJSON(t))
	return nil
}

// enableTrigger answers POST .../triggers/{name}/enable.
func (a *api) enableTrigger(w http.ResponseWriter, r *http.Request, c *call) error {
	return a.setTriggerEnabled(w, r, c, true)
}

// disableTrigger answers POST .../triggers/{name}/disable.
func (a *api) disableTrigger(w http.ResponseWriter, r *http.Request, c *call) error {
	return a.setTriggerEnabled(w, r, c, false)
}

// setTriggerEnabled enables or disables a trigger; a key limited to some
// queues enables only a trigger whose function version acts on nothing
// past its queue: no emits, stores or outbound hosts (checkTriggerEffects). Every server on the database follows at its next
// trigger reload (one second by default): a disabled trigger takes no new
// batches, the running ones finish.
func (a *api) setTriggerEnabled(w http.ResponseWriter, r *http.Request, c *call, enabled bool) error {
	name := r.PathValue("name")
	var changed bool
	err := a.exclusive(r.Context(), c.account, func() error {
		old, found, err := a.findTrigger(r.Context(), c.account, name)
		if err != nil {
			return err
		}
		if !found {
			return errorf(http.StatusNotFound, "not_found", "trigger %q not found in account %s", truncate(name, 90), c.account)
		}
		if !c.key.allowsQueues(triggerQueues(old)) {
			return c.forbidQueues("trigger " + name + ", which touches " + strconvQuote(old.Queue))
		}
		if enabled { // as putTrigger: a queue-limited key runs no function that acts past its queue
			if err := a.checkTriggerEffects(r, c, old); err != nil {
				return err
			}
		}
		changed, err = a.s.triggers.SetEnabled(r.Context(), c.account, name, enabled)
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.SetTriggerEnabledResult{Name: name, Enabled: enabled, Changed: changed})
	return nil
}
