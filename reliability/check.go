package reliability

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// CheckOptions tune Check for a scenario.
type CheckOptions struct {
	// Poison holds the ids expected to fail every time (and end in the
	// DLQ): they need no completed execution.
	Poison map[int64]bool
	// Kills tells when each killed process (by log file) was killed.
	Kills map[string]time.Time
	// AllowOverlap accepts a redelivery that starts while the previous
	// delivery still runs (lease extension off, on purpose).
	AllowOverlap bool
	// AcksMayBeLost accepts a redelivery after an ack that the server saw
	// succeed but the database lost in a crash (acks commit
	// asynchronously); such cases are counted, not failed.
	AcksMayBeLost bool
	// IgnoreUnsent accepts executions of ids the load generator does not
	// know (a send that committed but whose reply was lost in a crash).
	IgnoreUnsent bool
}

// Verdict is what Check found for one queue.
type Verdict struct {
	// Sent is the number of acknowledged sends; Executed the distinct ids
	// that ran; Executions every run.
	Sent, Executed, Executions int
	// Completed counts acknowledged sends with a run that got to its end;
	// Lost those without one (poison excepted).
	Completed, Lost int
	// Duplicates counts runs beyond the first of each id.
	Duplicates int
	// MaxAttempt is the highest attempt seen.
	MaxAttempt int
	// AckLost counts redeliveries after an ack the database lost (only
	// with AcksMayBeLost).
	AckLost int
	// Unsent counts ids run but never acknowledged to the load generator.
	Unsent int
	// Dropped counts deliveries run again after a run whose claim's commit
	// failed (Logs.Dropped): allowed, the first run's outcome was dropped.
	Dropped int
	// Problems lists every broken promise, one line each.
	Problems []string
}

// Err is nil when no promise broke, else names the problems (the first 20).
func (v Verdict) Err() error {
	if len(v.Problems) == 0 {
		return nil
	}
	p := v.Problems
	more := ""
	if len(p) > 20 {
		more = fmt.Sprintf("\n… and %d more", len(p)-20)
		p = p[:20]
	}
	return errors.New(strings.Join(p, "\n") + more)
}

// String summarises the figures.
func (v Verdict) String() string {
	return fmt.Sprintf("sent %d, executed %d distinct, %d executions (%d duplicates, max attempt %d; %d after runs whose claim did not commit), completed %d, lost %d, broken promises %d, acks lost in crash %d, unsent ids run %d",
		v.Sent, v.Executed, v.Executions, v.Duplicates, v.MaxAttempt, v.Dropped, v.Completed, v.Lost, len(v.Problems), v.AckLost, v.Unsent)
}

// Check compares the acknowledged sends of a queue with the executions its
// serve processes logged. It checks that
//   - every acknowledged send (but poison) has a run that got to its end
//     (none lost; a message is gone only after its function succeeded);
//   - no id is run again after a batch whose every ack was committed (so
//     duplicates come only from deliveries without a committed ack);
//   - no delivery (id, attempt) is run twice (but after a run whose claim's
//     commit failed, Logs.Dropped, which counts in Verdict.Dropped), and
//     no redelivery starts
//     while the previous delivery of the same id still runs or its
//     process still lives (no lease is held twice).
func Check(sent []int64, logs *Logs, queue string, opts CheckOptions) Verdict {
	byID := logs.For("queue:" + queue)
	v := Verdict{Sent: len(sent), Executed: len(byID)}
	known := make(map[int64]bool, len(sent))
	for _, id := range sent {
		known[id] = true
	}
	bad := func(format string, args ...any) { v.Problems = append(v.Problems, fmt.Sprintf(format, args...)) }
	ids := make([]int64, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		xs := byID[id]
		v.Executions += len(xs)
		v.Duplicates += len(xs) - 1
		if !known[id] {
			v.Unsent++
			if !opts.IgnoreUnsent {
				bad("message %d: run but never acknowledged as sent", id)
			}
		}
		for i, x := range xs {
			v.MaxAttempt = max(v.MaxAttempt, x.Attempt)
			if i == 0 {
				continue
			}
			prev := xs[i-1]
			if x.Attempt == prev.Attempt && logs.Dropped[prev.Invocation] {
				v.Dropped++
			} else if x.Attempt == prev.Attempt {
				bad("message %d: delivery %d run twice (invocations %s in %s and %s in %s): a lease held twice",
					id, x.Attempt, prev.Invocation, prev.Log, x.Invocation, x.Log)
			}
			if s, ok := logs.Settles[prev.Invocation]; ok && s.Outcome == "success" && s.Acked == s.Batch {
				if opts.AcksMayBeLost {
					v.AckLost++
				} else {
					bad("message %d: run again (attempt %d) after attempt %d's batch %s had every ack committed",
						id, x.Attempt, prev.Attempt, prev.Invocation)
				}
			}
			if opts.AllowOverlap {
				continue
			}
			if prev.EndMS > 0 && x.StartMS < prev.EndMS {
				bad("message %d: attempt %d started at %d while attempt %d ran until %d: a lease held twice",
					id, x.Attempt, x.StartMS, prev.Attempt, prev.EndMS)
			}
			if k, ok := opts.Kills[prev.Log]; prev.EndMS == 0 && ok && x.StartMS < k.UnixMilli() {
				bad("message %d: attempt %d started at %d while attempt %d's process lived until %d: a lease held twice",
					id, x.Attempt, x.StartMS, prev.Attempt, k.UnixMilli())
			}
		}
	}
	for _, id := range sent {
		if opts.Poison[id] {
			continue
		}
		done := false
		for _, x := range byID[id] {
			if x.EndMS > 0 {
				done = true
				break
			}
		}
		if done {
			v.Completed++
			continue
		}
		v.Lost++
		if len(byID[id]) == 0 {
			bad("message %d: acknowledged send never run: lost", id)
		} else {
			bad("message %d: gone with no run getting to its end (%d runs): lost", id, len(byID[id]))
		}
	}
	return v
}

// Percentile returns the p-th percentile (0-100) of xs (nearest rank); 0
// for none.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
