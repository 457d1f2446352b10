package triggers

import "github.com/sluicehq/sluice/runtime"

// Outcomes of an invocation, as recorded in the invocation log and shown
// by every surface (see docs/observability.md).
const (
	// OutcomeSuccess: the function succeeded on every message.
	OutcomeSuccess = "success"
	// OutcomePartialFailure: the function failed some messages of the
	// batch (listed them in batchItemFailures) and succeeded on the
	// others. The failure kind is FailureItems.
	OutcomePartialFailure = "partial_failure"
	// OutcomeFailure: the batch failed as a whole (non-zero exit, trap,
	// timeout, memory limit, output too large or invalid: the failure kind
	// says which), or the function failed every message of the batch
	// (failure kind FailureItems).
	OutcomeFailure = "failure"
)

// Outcomes are the valid outcomes, in the order docs list them.
var Outcomes = []string{OutcomeSuccess, OutcomePartialFailure, OutcomeFailure}

// FailureItems is the failure kind of an invocation whose function
// reported failed messages (batchItemFailures) rather than failing the
// batch; a whole-batch failure has the runtime's kind (exit_code, trap,
// timeout, memory_limit, output_too_large, invalid_output, unknown_item).
const FailureItems = "item_failures"

// allFailed reports whether the function failed every message of a batch
// it ran (a result without a whole-batch failure).
func allFailed(res runtime.Result) bool {
	if len(res.Messages) == 0 {
		return false
	}
	for _, m := range res.Messages {
		if m.Outcome == runtime.Acked {
			return false
		}
	}
	return true
}

// failureKindOf is the failure kind an invocation record keeps ("" for a
// success).
func failureKindOf(res runtime.Result) string {
	switch {
	case res.Failure != nil:
		return string(res.Failure.Kind)
	case res.OK():
		return ""
	default:
		return FailureItems
	}
}
