package triggers

import (
	"context"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
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
	b     queueBatch
	rules settleRules
	plan  settlePlan
	res   runtime.Result
	rec   invocationRecord
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
// with its own invocation record, in one transaction. When that
// transaction is refused (a lease no longer current fails it whole with
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

// commitTogether commits settlements without emits in one transaction: one
// statement per kind of settling for all of them, and each one's record.
func (d *dispatcher) commitTogether(ctx context.Context, group []*settlement) error {
	var acks []pgqueue.Ack
	var retries []pgqueue.Nack
	var fails []pgqueue.Failure
	for _, s := range group {
		acks = append(acks, s.plan.acks...)
		retries = append(retries, s.plan.retries...)
		fails = append(fails, s.plan.fails...)
	}
	b := d.e.cfg.Queue.NewBatch()
	d.queueSettlement(settlePlan{acks: acks, retries: retries, fails: fails})(b)
	for _, s := range group {
		s.rec.count(s.plan)
		s.rec.emitted, s.rec.emits = 0, nil
	}
	b.Queue(d.e.q.Get("insert_invocations"), recordsArgs(group)...)
	return b.Run(ctx, d.e.cfg.Pool)
}

// recordsArgs returns insert_invocations' arguments for the records of
// group, settlements of one trigger.
func recordsArgs(group []*settlement) []any {
	n := len(group)
	ids, sizes, started, durations := make([]int64, n), make([]int, n), make([]time.Time, n), make([]float64, n)
	outcomes, kinds, errs, stderrs := make([]string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	acked, retried, dead, messageIDs := make([]int, n), make([]int, n), make([]int, n), make([]string, n)
	requests, httpErrors, sent, received := make([]int, n), make([]int, n), make([]int64, n), make([]int64, n)
	var list []byte
	for i, s := range group {
		r := &s.rec
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
	r := &group[0].rec
	return []any{r.account, r.function, r.version, nullIfZero(r.triggerID), r.triggerType, r.source, r.trigger,
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
			Version: a.version, Started: rec.startedAt, Duration: s.res.Duration, Outcome: rec.outcome,
			Acked: rec.acked, Retried: rec.retried, Dead: rec.dead, Emitted: rec.emitted, CreatedAt: s.b.created})
	}
	ev := d.log.Debug()
	if rec.outcome != "success" {
		ev = d.log.Warn().Str("error", rec.err)
	}
	ev.Str("invocation", strconv.FormatInt(rec.id, 10)).Int("batch", len(s.b.msgs)).Int("acked", rec.acked).Int("retried", rec.retried).
		Int("dead", rec.dead).Int("emitted", rec.emitted).Float64("duration_ms", float64(s.res.Duration.Microseconds())/1000).Msg(rec.outcome)
}
