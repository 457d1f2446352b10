package triggers

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/runtime"
)

// invocationRecord is one row of the invocations table.
type invocationRecord struct {
	// id is taken before the function runs (Engine.invocationID), so the
	// guest's log lines carry the id the record gets.
	id int64
	// trigger is the name the invocation is recorded under: the trigger's
	// name, or InvokeTrigger.
	trigger              string
	account, function    string
	version              int
	triggerID            int64
	triggerType, source  string
	batchSize            int
	startedAt            time.Time
	duration             time.Duration
	outcome, failureKind string
	err                  string
	acked, retried, dead int
	emitted              int
	// emits are the emits the settlement sends (emitted_messages).
	emits      []runtime.Emit
	messageIDs []int64
	stderr     []byte
	// host counts the calls the function made through the host imports.
	host runtime.HostStats
}

// maxRecordedStderr caps the stderr kept per invocation row.
const maxRecordedStderr = 8 << 10

// setResult fills in what the record says of how the function ran.
func (r *invocationRecord) setResult(res runtime.Result) {
	r.duration, r.stderr, r.outcome, r.err = res.Duration, res.Stderr, outcomeOf(res), firstError(res)
	r.host = res.Host
	r.failureKind = failureKindOf(res)
}

// count sets the record's counts to what plan p settles.
func (r *invocationRecord) count(p settlePlan) {
	r.acked, r.retried, r.dead = p.preAcked+len(p.acks), len(p.retries), p.preDead+len(p.fails)
}

// commit runs, as one transaction in one round trip, what settles an
// invocation (settle adds it to the batch), the emits that go out and the
// invocation record: the record's counts are exactly what the transaction
// did, and an emit exists if and only if the settlement committed.
func (e *Engine) commit(ctx context.Context, settle func(*pgqueue.Batch), emits []runtime.Emit, rec *invocationRecord) error {
	b := e.cfg.Queue.NewBatch()
	if settle != nil {
		settle(b)
	}
	if len(emits) > 0 {
		b.NoteSent() // for the record's emitted_messages
	}
	queueEmits(b, rec.account, emits)
	rec.emitted, rec.emits = len(emits), emits
	b.Queue(e.q.Get("insert_invocation"), rec.args()...)
	return b.Run(ctx, e.cfg.Pool)
}

// commitOrRefuse is commit, and when the database refuses an emit (the
// queue does not exist, a message is too large ...) the function's output
// is refused: fail(msg) turns the invocation into a whole-batch
// invalid_output failure and returns the settlement and record of that,
// which is committed without emits.
func (e *Engine) commitOrRefuse(ctx context.Context, settle func(*pgqueue.Batch), emits []runtime.Emit, rec *invocationRecord,
	fail func(msg string) func(*pgqueue.Batch)) error {
	err := e.commit(ctx, settle, emits, rec)
	if err == nil || len(emits) == 0 {
		return err
	}
	msg := emitRefusal(err)
	if msg == "" {
		return err
	}
	return e.commit(ctx, fail(msg), nil, rec)
}
