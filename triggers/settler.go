package triggers

import (
	"context"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/runtime"
)

// maxCoalesced is the most settlements a settler commits together.
const maxCoalesced = 256

// settlerCount is how many settlers a dispatcher runs: while one commits,
// another gathers and commits the settlements that come meanwhile.
const settlerCount = 2

// settlement is a batch that ran, with what becomes of it: what the
// settler commits.
type settlement struct {
	// claimed is when the batch was queued for a worker (queuedBatch.at).
	claimed time.Time
	b       queueBatch
	rules   settleRules
	plan    settlePlan
	res     runtime.Result
	rec     invocationRecord
}

// settler commits the settlements of the dispatcher's batches until
// d.settles is closed: each time, every settlement pending, in one
// transaction and one round trip (settleTogether), so that the batches of
// a claim pay for one commit.
func (d *dispatcher) settler() {
	var group []*settlement
	for s := range d.settles {
		group = append(group[:0], s)
	more:
		for len(group) < maxCoalesced {
			select {
			case s, ok := <-d.settles:
				if !ok {
					break more
				}
				group = append(group, s)
			default:
				break more
			}
		}
		d.settleTogether(group)
		clear(group)
	}
}

// settleTogether commits settlements: those that send emits each in its
// own transaction (settle: what a send emitted is noted in one
// transaction-local setting for its record), the others together, each
// with its own invocation record, in one transaction (commitTogether).
// When that transaction is refused (a lease no longer current fails it whole with
// ErrStaleReceipt), each is settled on its own instead, so a refused
// settlement does not take the others down with it.
func (d *dispatcher) settleTogether(group []*settlement) {
	ctx := context.WithoutCancel(d.e.runCtx)
	var together []*settlement
	for _, s := range group {
		if len(selectEmits(s.res, succeeded(s.res))) > 0 {
			d.settleOne(ctx, s)
		} else {
			together = append(together, s)
		}
	}
	if len(together) == 1 {
		d.settleOne(ctx, together[0])
	}
	if len(together) < 2 {
		return
	}
	if err := d.commitTogether(ctx, together); err != nil {
		for _, s := range together {
			d.settleOne(ctx, s)
		}
		return
	}
	for _, s := range together {
		d.wakeForRetries(s.plan)
		d.settled(s)
	}
}

// commitTogether commits settlements without emits in one transaction:
// their plans merged and each one's record, in one call (commitByID).
func (d *dispatcher) commitTogether(ctx context.Context, group []*settlement) error {
	var p settlePlan
	recs := make([]*invocationRecord, len(group))
	for i, s := range group {
		p.acks = append(p.acks, s.plan.acks...)
		p.retries = append(p.retries, s.plan.retries...)
		p.fails = append(p.fails, s.plan.fails...)
		s.rec.count(s.plan)
		recs[i] = &s.rec
	}
	return d.commitByID(ctx, p, recs)
}

// commitByID commits plan p, a settlement of the trigger's queue without
// emits, and the invocation records recs, whose counts are set (it notes
// that they emitted nothing), as one statement: settle_invocations
// (migration 007), called by the queue's id through
// pgqueue.Client.SettleByID. On Citus that call is delegated to
// the worker holding the queue's shard, where the invocation log of the
// queue is too (triggers/citus.sql), and commits there alone. Like the
// batch it replaces, it takes effect whole or not at all: a lease no
// longer current fails it with pgqueue.ErrStaleReceipt.
func (d *dispatcher) commitByID(ctx context.Context, p settlePlan, recs []*invocationRecord) error {
	for _, r := range recs {
		r.emitted, r.emits = 0, nil
	}
	return d.e.cfg.Queue.SettleByID(ctx, d.a.Account, d.a.Queue, p.acks, p.retries, p.fails,
		d.e.q.Get("settle_invocations"), recordsArgs(recs)...)
}

// recordsArgs returns settle_invocations' arguments for records recs of
// one queue trigger, after those of the settlement.
func recordsArgs(recs []*invocationRecord) []any {
	n := len(recs)
	ids, sizes, started, durations := make([]int64, n), make([]int, n), make([]time.Time, n), make([]float64, n)
	outcomes, kinds, errs, stderrs := make([]string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	acked, retried, dead, messageIDs := make([]int, n), make([]int, n), make([]int, n), make([]string, n)
	requests, httpErrors, sent, received := make([]int, n), make([]int, n), make([]int64, n), make([]int64, n)
	var list []byte
	for i, r := range recs {
		ids[i], sizes[i], started[i], durations[i], outcomes[i] = r.id, r.batchSize, r.startedAt, r.durationMS(), r.outcome
		stderrs[i], kinds[i], errs[i] = r.texts()
		acked[i], retried[i], dead[i] = r.acked, r.retried, r.dead
		list = append(list[:0], '{')
		for j, id := range r.messageIDs {
			if j > 0 {
				list = append(list, ',')
			}
			list = strconv.AppendInt(list, id, 10)
		}
		messageIDs[i] = string(append(list, '}'))
		requests[i], httpErrors[i], sent[i], received[i] = r.host.HTTPRequests, r.host.HTTPErrors, r.host.HTTPBytesSent, r.host.HTTPBytesReceived
	}
	r := recs[0]
	return []any{r.function, r.version, nullIfZero(r.triggerID), r.triggerType, r.source, r.trigger,
		ids, sizes, started, durations, outcomes, kinds, errs, acked, retried, dead, messageIDs, stderrs,
		requests, httpErrors, sent, received}
}

// settleOne commits one settlement (settle) and reports it.
func (d *dispatcher) settleOne(ctx context.Context, s *settlement) {
	if err := d.settle(ctx, s.b, s.rules, s.plan, s.res, &s.rec); err != nil {
		d.log.Error().Err(err).Int("messages", len(s.b.msgs)).
			Msg("settling the batch failed: nothing of it was done; its leases will expire and the messages be redelivered")
		return
	}
	d.settled(s)
}

// settled reports a settled batch: OnBatch and the log line naming its
// invocation.
func (d *dispatcher) settled(s *settlement) {
	a, rec := d.a, &s.rec
	if d.e.cfg.OnBatch != nil {
		d.e.cfg.OnBatch(BatchEvent{Account: a.Account, Trigger: a.Name, Queue: a.Queue, Function: a.Function,
			Version: a.version, Claimed: s.claimed, Started: rec.startedAt, Duration: s.res.Duration, Startup: s.res.Startup, Outcome: rec.outcome,
			Acked: rec.acked, Retried: rec.retried, Dead: rec.dead, Emitted: rec.emitted, CreatedAt: s.b.created})
	}
	ev := d.log.Debug()
	if rec.outcome != "success" {
		ev = d.log.Warn().Str("error", rec.err)
	}
	ev.Str("invocation", strconv.FormatInt(rec.id, 10)).Int("batch", len(s.b.msgs)).Int("acked", rec.acked).Int("retried", rec.retried).
		Int("dead", rec.dead).Int("emitted", rec.emitted).Float64("duration_ms", float64(s.res.Duration.Microseconds())/1000).
		Float64("startup_ms", float64(s.res.Startup.Microseconds())/1000).Msg(rec.outcome)
}
