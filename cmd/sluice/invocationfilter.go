package main

import (
	"flag"
	"time"

	"github.com/sluicehq/sluice/client"
)

// invocationFilter is the filter flags `sluice logs` and `sluice
// invocations` share: --function, --trigger, --outcome and --since.
type invocationFilter struct {
	function, trigger, outcome string
	since                      time.Duration
}

// addInvocationFilter registers the shared filter flags on f; sinceNote
// ends the help of --since with what the command does without it.
func addInvocationFilter(f *flag.FlagSet, sinceNote string) *invocationFilter {
	v := &invocationFilter{}
	f.StringVar(&v.function, "function", "", "only this function's")
	f.StringVar(&v.trigger, "trigger", "", "only the trigger `name`'s, as sluice triggers list and the TRIGGER column of sluice invocations show it (invoke: the invoke API's)")
	f.StringVar(&v.outcome, "outcome", "", "only success, partial_failure or failure")
	f.DurationVar(&v.since, "since", 0, "only those started within this long, e.g. 15m"+sinceNote)
	return v
}

// check refuses an unknown --outcome and a negative --since.
func (v *invocationFilter) check() error {
	switch v.outcome {
	case "", "success", "partial_failure", "failure":
	default:
		return usageErrorf("--outcome %q: use success, partial_failure or failure", v.outcome)
	}
	if v.since < 0 {
		return usageErrorf("--since %s: must be positive", v.since)
	}
	return nil
}

// start is the time --since reaches back to, def when it was not given
// (zero when def is zero too).
func (v *invocationFilter) start(def time.Duration) time.Time {
	d := v.since
	if d == 0 {
		d = def
	}
	if d == 0 {
		return time.Time{}
	}
	return time.Now().Add(-d)
}

// logsOptions is the query of `sluice logs`: the filter, following new
// invocations when follow is set. Without --since it starts 10 minutes
// back, or with follow at the end of the log (only new invocations).
func (v *invocationFilter) logsOptions(follow bool) client.LogsOptions {
	def := 10 * time.Minute
	if follow {
		def = 0
	}
	return client.LogsOptions{Function: v.function, Trigger: v.trigger, Outcome: v.outcome, Since: v.start(def), Follow: follow}
}

// invocationsOptions is the query of `sluice invocations`: the filter,
// without a start when --since was not given.
func (v *invocationFilter) invocationsOptions() client.InvocationsOptions {
	return client.InvocationsOptions{Function: v.function, Trigger: v.trigger, Outcome: v.outcome, Since: v.start(0)}
}
