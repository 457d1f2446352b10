package triggers

import (
	"strconv"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/runtime"
)

// queueBatch is a claimed batch, converted once into what running and
// settling it take.
type queueBatch struct {
	msgs     []pgqueue.Message
	leases   []pgqueue.Ack     // each message's sequence and receipt
	ids      []int64           // the sequences, for the invocation record
	messages []runtime.Message // the messages as the function gets them
	created  []time.Time       // when each message was sent
}

func newQueueBatch(msgs []pgqueue.Message) queueBatch {
	b := queueBatch{
		msgs:     msgs,
		leases:   make([]pgqueue.Ack, len(msgs)),
		ids:      make([]int64, len(msgs)),
		messages: make([]runtime.Message, len(msgs)),
		created:  make([]time.Time, len(msgs)),
	}
	for i, m := range msgs {
		b.leases[i] = pgqueue.Ack{Sequence: m.Sequence, Receipt: m.Receipt}
		b.ids[i] = m.Sequence
		b.messages[i] = runtime.Message{ID: strconv.FormatInt(m.Sequence, 10), Attempt: m.ReceiveCount,
			CreatedAt: m.CreatedAt, Headers: m.Headers, Body: m.Body}
		b.created[i] = m.CreatedAt
	}
	return b
}

// settleRules are what a queue trigger's ack policy and queue settings make
// of its batches. The ack policy is read here and nowhere else.
type settleRules struct {
	// deleteFirst (ack_first): a batch is deleted before it runs, at most
	// once. It then holds no lease, so there is none to extend or release,
	// and a failure is only counted (as dead) and logged.
	deleteFirst bool
	// rejectOnError (reject_on_error): a failed message goes to the DLQ at
	// once instead of being retried.
	rejectOnError bool
	// extendLeases renews a batch's leases while the function runs.
	extendLeases bool
	// maxReceiveCount is the queue's: a message failing its last delivery
	// goes to the DLQ.
	maxReceiveCount int
	// backoff is the retry delay after a delivery attempt, for failures
	// the function gave no delay for.
	backoff func(attempt int) time.Duration
}

func (a *active) settleRules() settleRules {
	r := settleRules{extendLeases: a.LeaseExtension, maxReceiveCount: a.maxReceiveCount, backoff: a.backoff}
	switch a.AckPolicy {
	case AckPolicyAckFirst:
		r.deleteFirst, r.extendLeases = true, false
	case AckPolicyRejectOnError:
		r.rejectOnError = true
	}
	return r
}

// settlePlan is what becomes of a batch's messages once the function has
// returned: one statement per list.
type settlePlan struct {
	// notRun: the batch did not run (the engine is shutting down, or the
	// function was closed under it); nothing is recorded and release gives
	// its leases back at once so another process takes it now.
	notRun  bool
	release []pgqueue.Nack
	acks    []pgqueue.Ack
	retries []pgqueue.Nack
	fails   []pgqueue.Failure
	// preAcked and preDead count, under deleteFirst, the messages deleted
	// before the run that the function succeeded and failed on.
	preAcked, preDead int
}

// planSettlement decides what becomes of every message of batch b after a
// run that returned res and invokeErr: without a side effect, so it can be
// tested without a database. A message the function succeeded on is
// acked; one it failed permanently, or any failed one under
// reject_on_error, is dead-lettered; one that failed on its last delivery
// is dead-lettered; any other failure is retried after the delay the
// function asked for, or the trigger's backoff.
func planSettlement(r settleRules, b queueBatch, res runtime.Result, invokeErr error) settlePlan {
	var p settlePlan
	if invokeErr != nil || (res.Failure != nil && res.Failure.Kind == runtime.FailureCanceled) {
		p.notRun = true
		if !r.deleteFirst {
			p.release = make([]pgqueue.Nack, len(b.leases))
			for i, l := range b.leases {
				p.release[i] = pgqueue.Nack{Sequence: l.Sequence, Receipt: l.Receipt}
			}
		}
		return p
	}
	for i, m := range b.msgs {
		out, lease := res.Messages[i], b.leases[i]
		switch {
		case r.deleteFirst:
			if out.Outcome == runtime.Acked {
				p.preAcked++
			} else {
				p.preDead++ // deleted before the run: the failure is only logged
			}
		case out.Outcome == runtime.Acked:
			p.acks = append(p.acks, lease)
		case out.Outcome == runtime.Permanent:
			p.fails = append(p.fails, pgqueue.Failure{Sequence: m.Sequence, Receipt: m.Receipt, Reason: ReasonPermanent, Error: out.Error})
		case r.rejectOnError:
			p.fails = append(p.fails, pgqueue.Failure{Sequence: m.Sequence, Receipt: m.Receipt, Reason: ReasonRejected, Error: out.Error})
		case m.ReceiveCount >= r.maxReceiveCount:
			p.fails = append(p.fails, pgqueue.Failure{Sequence: m.Sequence, Receipt: m.Receipt, Reason: ReasonMaxReceiveCount, Error: out.Error})
		default:
			delay := out.RetryAfter
			if delay <= 0 {
				delay = r.backoff(m.ReceiveCount)
			}
			p.retries = append(p.retries, pgqueue.Nack{Sequence: m.Sequence, Receipt: m.Receipt, Delay: delay, Error: out.Error})
		}
	}
	return p
}
