package triggers

import "github.com/sluicehq/sluice/runtime"

// CheckEmits checks emits against a function's emits patterns and the
// per-batch size cap as the dispatcher does before sending them; the
// error is the invalid_output message naming the target and the rule.
// `sluice invoke` uses it to show what a deployed function's batch would
// do.
func CheckEmits(patterns []string, emits []runtime.Emit) error { return checkEmits(patterns, emits) }

// SentEmits returns the emits of res that the dispatcher would send: none
// after a whole-batch failure; else those without For and those For a
// message that succeeded.
func SentEmits(res runtime.Result) []runtime.Emit { return selectEmits(res, succeeded(res)) }
