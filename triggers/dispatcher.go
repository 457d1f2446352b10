package triggers

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime/trace"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/runtime"
)

// DLQ reasons the dispatcher records.
const (
	ReasonPermanent       = "permanent_failure"
	ReasonRejected        = "rejected_on_error"
	ReasonMaxReceiveCount = "max_receive_count"
)

// leaseSlack is the shortest lease a claim takes beyond its batch window.
const leaseSlack = time.Second

// active is one enabled trigger with what it currently runs.
type active struct {
	Trigger
	version   int
	sha256    string
	memoryMiB int
	timeout   time.Duration
	env       map[string]string
	// capabilities is what the version may do beyond reporting failures
	// (part of the version, so a change to them changes the version).
	capabilities functions.Capabilities
	// queue settings (queue triggers)
	visibility      time.Duration
	maxReceiveCount int
	// dryRun loads the function for a dry-run invoke: its key-value
	// writes stay in the run (dryRunKV) and its HTTP calls are refused.
	dryRun bool
}

// runKey says when a running dispatcher must be replaced: any change of the
// trigger, the version it runs, or the queue's lease settings.
func (a *active) runKey() string {
	return a.UpdatedAt.String() + "|" + a.sha256 + "|" + strconv.Itoa(a.version) + "|" +
		a.visibility.String() + "|" + strconv.Itoa(a.maxReceiveCount) + "|" + strconv.Itoa(a.memoryMiB) +
		"|" + a.timeout.String()
}

// lease is how long a claim leases a batch: the queue's visibility timeout,
// and never less than the batch window plus leaseSlack so the window cannot
// eat the lease. With lease extension on (the default) the lease is renewed
// while the function runs, so a batch is never redelivered behind a running
// function's back, however long its timeout, while a crashed process's
// batches come back after one visibility timeout. With extension off the
// queue's visibility timeout must cover the function's timeout; otherwise a
// slow batch is redelivered and its late settlement refused (stale receipt).
func (a *active) lease() time.Duration {
	return max(a.visibility, a.BatchWindow+leaseSlack)
}

// backoff returns the retry delay after the given delivery attempt:
// BackoffInitial doubled per earlier attempt, capped at BackoffMax, with
// "equal jitter" (half fixed, half random) so retries of a failed batch
// spread out.
func (a *active) backoff(attempt int) time.Duration {
	d := a.BackoffInitial
	for i := 1; i < attempt && d < a.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, a.BackoffMax)
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + rand.N(half+1)
}

// maxClaim is the most messages one receive of a dispatcher claims.
const maxClaim = 1000

// claimAhead bounds how long the batches a dispatcher claimed ahead of its
// workers wait for one, at the average batch's pace (claimLimit).
const claimAhead = time.Second

// dispatcher feeds one queue trigger's batches to its function, running up
// to Concurrency batches at once, one on each of its workers. One receive
// claims enough messages for every worker that is free and some ahead, so
// a claim is shared by several batches; the batches' settlements are
// committed by the settlers, those that are pending together (settler).
type dispatcher struct {
	e   *Engine
	a   *active
	fn  *runtime.Function
	log zerolog.Logger

	cancel  context.CancelFunc // stops claiming
	stopped chan struct{}      // closed when the claim loop, all batches and their settlements are done
	// due wakes the claim loop when a retry this dispatcher scheduled comes
	// due, so an idle queue need not be polled often to retry on time.
	due chan struct{}
	// settles takes the settlements of the batches that ran, to the settler.
	settles chan *settlement
	// avgRun is the moving average of a batch's wall time (ns), 0 before
	// the first batch (observe).
	avgRun atomic.Int64
	// lastClaim is the claim loop's last receive, whose commit the next
	// one waits for (claim).
	lastClaim *pgqueue.PendingReceive
}

// wakeAfter makes the claim loop look for messages again after d.
func (d *dispatcher) wakeAfter(delay time.Duration) {
	time.AfterFunc(delay, func() {
		select {
		case d.due <- struct{}{}:
		default:
		}
	})
}

func (e *Engine) startDispatcher(a *active, fn *runtime.Function) *dispatcher {
	ctx, cancel := context.WithCancel(context.Background())
	d := &dispatcher{
		e: e, a: a, fn: fn, cancel: cancel, stopped: make(chan struct{}), due: make(chan struct{}, 1),
		settles: make(chan *settlement, maxCoalesced),
		log: e.log.With().Str("trigger", a.Name).Str("queue", a.Queue).Str("function", a.Function).
			Int("version", a.version).Logger(),
	}
	go d.run(ctx)
	return d
}

// stop makes the dispatcher stop claiming; batches already running go on
// until done (or until the engine's run context is cancelled).
func (d *dispatcher) stop() { d.cancel() }

func (d *dispatcher) done() <-chan struct{}       { return d.stopped }
func (d *dispatcher) function() *runtime.Function { return d.fn }

func (d *dispatcher) run(ctx context.Context) {
	defer close(d.stopped)
	var settlers sync.WaitGroup
	for range settlerCount {
		settlers.Go(d.settler)
	}
	// Claims run ahead of the batches: a claimed batch waits in queue,
	// holding its leases, for one of Concurrency workers, so a worker that
	// finishes a batch starts the next without waiting for a receive. held
	// counts the batches claimed and not finished (claimLimit bounds it,
	// and so queue's length: a send never waits); finished wakes the claim
	// loop when one finishes. The workers live as long as the dispatcher,
	// where a goroutine per batch cost a message at batch size 1 its
	// start, its stack's growth and a park and wake-up on the slots
	// (BENCHMARKS.md, "Workers instead of a goroutine per batch").
	queue := make(chan queuedBatch, d.a.Concurrency+max(1, 2*maxClaim/d.a.BatchSize))
	var held atomic.Int64
	finished := make(chan struct{}, 1)
	done := func() {
		held.Add(-1)
		select {
		case finished <- struct{}{}:
		default:
		}
	}
	var workers sync.WaitGroup
	for range d.a.Concurrency {
		workers.Go(func() {
			for q := range queue {
				d.runQueued(ctx, q)
				done()
			}
		})
	}
	// Once the claim loop ends, what is still queued is given back at once,
	// in one release (an idle worker may give back one it took), not after
	// the running batches; once no batch runs, the settlers commit what is
	// pending and end.
	defer func() {
		close(queue)
		var left []pgqueue.Message
		for q := range queue {
			if q.lease.Wait() == nil {
				left = append(left, q.msgs...)
			}
			done()
		}
		if len(left) > 0 {
			d.giveBack(context.WithoutCancel(ctx), left)
		}
		workers.Wait()
		close(d.settles)
		settlers.Wait()
	}()
	var sub *pgqueue.Subscription
	if d.e.cfg.Listener != nil {
		s, err := d.e.cfg.Listener.Subscribe(ctx, d.a.Account, d.a.Queue)
		if err != nil {
			d.log.Warn().Err(err).Msg("no wake-ups for queue; polling only")
		} else {
			sub = s
			defer sub.Close()
		}
	}
	var wake <-chan struct{}
	if sub != nil {
		wake = sub.C()
	}
	start := func(batch []pgqueue.Message, lease *pgqueue.PendingReceive) {
		held.Add(1)
		queue <- queuedBatch{msgs: batch, lease: lease, at: time.Now()}
	}
	idle := d.e.cfg.PollMin
	for {
		free := d.claimLimit() - int(held.Load())
		if free <= 0 {
			select {
			case <-finished:
				continue
			case <-ctx.Done():
				return
			}
		}
		started, err := d.claim(ctx, wake, free, start)
		if started > 0 {
			idle = d.e.cfg.PollMin
			continue
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			d.log.Error().Err(err).Msg("receive failed")
			idle = d.e.cfg.PollMax
		}
		select {
		case <-wake:
			idle = d.e.cfg.PollMin
		case <-d.due:
			idle = d.e.cfg.PollMin
		case <-time.After(idle):
			idle = min(idle*2, d.e.cfg.PollMax)
		case <-ctx.Done():
			return
		}
	}
}

// traceBatch notes in the execution trace (when one is taken, SLUICE_TRACE)
// what happened to a batch: the queue and the messages' sequences.
func traceBatch(ctx context.Context, what, queue string, msgs []pgqueue.Message) {
	if !trace.IsEnabled() || len(msgs) == 0 {
		return
	}
	b := []byte(queue)
	for _, m := range msgs {
		b = strconv.AppendInt(append(b, ' '), m.Sequence, 10)
	}
	trace.Log(ctx, what, string(b))
}

// observe adds the wall time of a batch that ran to the dispatcher's
// moving average.
func (d *dispatcher) observe(took time.Duration) {
	avg := d.avgRun.Load()
	if avg == 0 {
		d.avgRun.Store(int64(took))
		return
	}
	d.avgRun.Store(avg + (int64(took)-avg)/8)
}

// claimLimit is how many batches may be claimed and not finished: one per
// worker, and as many more as the workers run in claimAhead at the average
// batch's pace (none for batches that take that long), so that a batch
// waiting for a worker neither waits long enough to lose its lease nor keeps
// messages from other processes for long; at most 2×maxClaim messages.
func (d *dispatcher) claimLimit() int {
	c := d.a.Concurrency
	extra := c // until a batch has run
	if avg := d.avgRun.Load(); avg > 0 {
		ahead := min(claimAhead, d.a.lease()/4)
		extra = int(min(int64(c)*int64(ahead)/avg, 2*maxClaim))
	}
	return c + min(extra, max(1, 2*maxClaim/d.a.BatchSize))
}

// claim receives up to free×BatchSize messages (at most maxClaim) in one
// receive and starts them in batches of BatchSize (free is how many more
// batches the dispatcher may hold, claimLimit); it returns how many
// batches it started. With a batch window, a last batch
// that is not full keeps receiving until it is full or the window has
// passed since its first message (the full ones start first).
//
// The batches start while the receive's commit is on its way to disk
// (pgqueue's ReceivePending): a function is invoked that much sooner, and
// runBatch settles nothing before the commit has succeeded.
//
// A receive is never cancelled once started: cancelling the statement
// could lose the race with its commit and leave messages leased by nobody
// until their visibility timeout. Stopping the dispatcher (ctx) ends the
// batch window early instead, and what was claimed is released
// (runQueued).
func (d *dispatcher) claim(ctx context.Context, wake <-chan struct{}, free int, start func([]pgqueue.Message, *pgqueue.PendingReceive)) (int, error) {
	if ctx.Err() != nil {
		return 0, nil
	}
	// One claim at a time, as when a receive returned after its commit: a
	// receive beside an uncommitted one would step over each of its rows,
	// still ready in the index and locked (SKIP LOCKED), a cost per row
	// that took a sixth of the drain at batch size 1.
	if d.lastClaim != nil {
		d.lastClaim.Wait() //nolint:errcheck // the batches of the claim report it
	}
	size := d.a.BatchSize
	receiveCtx := context.WithoutCancel(ctx)
	opts := pgqueue.ReceiveOptions{Max: min(free*size, max(size, maxClaim)), VisibilityTimeout: d.a.lease()}
	lease, err := d.e.cfg.Queue.ReceivePending(receiveCtx, d.a.Account, d.a.Queue, opts)
	if err != nil {
		return 0, err
	}
	d.lastClaim = lease
	msgs := lease.Messages
	traceBatch(ctx, "sluice.received", d.a.Queue, msgs)
	started := 0
	for len(msgs) >= size || (len(msgs) > 0 && d.a.BatchWindow <= 0) {
		n := min(size, len(msgs))
		start(msgs[:n:n], lease)
		msgs, started = msgs[n:], started+1
	}
	if len(msgs) == 0 {
		return started, nil
	}
	// The batch that waits for more messages holds them past this
	// receive's commit: if the commit failed, they are not leased.
	if err := lease.Wait(); err != nil {
		return started, err
	}
	batch := msgs
	deadline := time.NewTimer(d.a.BatchWindow)
	defer deadline.Stop()
	for len(batch) < size {
		select {
		case <-deadline.C:
			start(batch, lease)
			return started + 1, nil
		case <-ctx.Done():
			start(batch, lease)
			return started + 1, nil
		case <-wake:
		case <-time.After(min(d.a.BatchWindow/4+time.Millisecond, 50*time.Millisecond)):
		}
		opts.Max = size - len(batch)
		more, err := d.e.cfg.Queue.Receive(receiveCtx, d.a.Account, d.a.Queue, opts)
		if err != nil {
			break
		}
		batch = append(batch, more...)
	}
	start(batch, lease)
	return started + 1, nil
}

// queuedBatch is a claimed batch waiting for a worker, since at; lease is
// the receive that claimed it (its first messages), whose commit may still
// be under way: when that commit fails, the messages were not leased and
// there is nothing to settle or give back.
type queuedBatch struct {
	msgs  []pgqueue.Message
	lease *pgqueue.PendingReceive
	at    time.Time
}

// runQueued runs a batch a worker took from the queue. A batch that waited
// so long (half a lease) that its lease might expire before its first
// extension, or whose dispatcher stopped (ctx) while it waited, is not
// run: its leases are given back at once (giveBack), so this or another
// process claims the messages again now.
func (d *dispatcher) runQueued(ctx context.Context, q queuedBatch) {
	if ctx.Err() != nil || time.Since(q.at) >= d.a.lease()/2 {
		if q.lease.Wait() == nil {
			d.giveBack(context.WithoutCancel(ctx), q.msgs)
		}
		return
	}
	began := time.Now()
	// The batch runs on the engine's context, not the dispatcher's: a
	// dispatcher that is replaced lets its batches finish.
	d.runBatch(d.e.runCtx, q)
	d.observe(time.Since(began))
}

// giveBack releases the leases of a claimed batch that was never handed to
// the function (pgqueue's Release): the claim does not count as a
// delivery, so a message gives up no attempt, and one claimed on its final
// lease is not dead-lettered without having run.
func (d *dispatcher) giveBack(ctx context.Context, batch []pgqueue.Message) {
	leases := pgqueue.Leases(batch)
	if _, err := d.e.cfg.Queue.Release(ctx, d.a.Account, d.a.Queue, leases); err != nil {
		d.log.Error().Err(err).Int("messages", len(batch)).Msg("giving back claimed messages failed; their leases will expire instead")
	}
}

// runBatch invokes the function on a claimed batch under ctx (the
// engine's run context) and settles every message as planSettlement says:
// acks in one statement, retries with backoff, dead letters at once.
//
// The function may start before the claim's commit has returned
// (runEarly); nothing is settled or recorded before it has succeeded, and
// when it fails the run is cancelled and its outcome dropped: the
// messages were not leased, and are delivered again.
func (d *dispatcher) runBatch(ctx context.Context, q queuedBatch) {
	a, rules, msgs := d.a, d.a.settleRules(), q.msgs
	b := newQueueBatch(msgs)
	settleCtx := context.WithoutCancel(ctx)
	ctx, stop := d.runEarly(ctx, q, rules)
	defer stop()
	if q.lease.Err() != nil {
		d.leaseFailed(q, 0)
		return
	}

	// The id comes first: taking it may fail, and then the leases are
	// still held (even under ack_first) and released.
	invID, err := d.e.invocationID(settleCtx)
	if err != nil {
		d.log.Error().Err(err).Msg("batch not run; leases released")
		if q.lease.Wait() == nil {
			d.giveBack(settleCtx, msgs)
		}
		return
	}
	if rules.deleteFirst {
		// The delete reaches disk before the run (AckTx on the pool
		// commits synchronously, where Ack would not wait for the disk): a
		// delete lost to a database crash would run the messages again.
		if _, err := d.e.cfg.Queue.AckTx(settleCtx, d.e.cfg.Queue.Pool(), a.Account, a.Queue, b.leases); err != nil {
			d.log.Error().Err(err).Msg("ack_first: delete before invoking failed; leases will expire and redeliver")
			return
		}
	}
	inv := runtime.Invocation{
		ID:       strconv.FormatInt(invID, 10),
		Trigger:  runtime.Trigger{Type: "queue", Source: a.Queue, Name: a.Name},
		Messages: b.messages,
	}
	stopExtending := func() {}
	if rules.extendLeases {
		stopExtending = d.extendLeases(ctx, b.leases)
	}
	started := time.Now()
	traceBatch(ctx, "sluice.invoke", a.Queue, msgs)
	res, err := d.fn.Invoke(ctx, inv)
	stopExtending()
	if q.lease.Wait() != nil {
		d.leaseFailed(q, invID)
		return
	}

	plan := planSettlement(rules, b, res, err)
	if plan.notRun {
		d.release(settleCtx, plan.release)
		if err != nil {
			// No record is written: the line names no invocation id.
			d.log.Warn().Err(err).Msg("batch not run; leases released")
		}
		return
	}
	if err := checkEmits(a.capabilities.Emits, res.Emits); err != nil {
		res = failBatch(res, err.Error())
		plan = planSettlement(rules, b, res, nil)
	}
	rec := invocationRecord{
		id: invID, trigger: a.Name,
		account: a.Account, function: a.Function, version: a.version, triggerID: a.ID,
		triggerType: "queue", source: a.Queue, batchSize: len(msgs), startedAt: started, messageIDs: b.ids,
	}
	rec.setResult(res)
	// The settler commits it, with what else is pending; the worker is free
	// for the next batch meanwhile.
	d.settles <- &settlement{claimed: q.at, b: b, rules: rules, plan: plan, res: res, rec: rec}
}

// runEarly returns the context the batch runs under: ctx itself once the
// claim's commit has ended, and until then (a batch taken at once from a
// claim whose commit is still on its way to disk) a context that is
// cancelled if it fails. A batch with messages of ordered groups, or that
// deletes its messages before the run (ack_first), waits for the commit
// instead: a group's one-batch-at-a-time guarantee holds from the commit
// of its lease. stop releases what the context holds.
func (d *dispatcher) runEarly(ctx context.Context, q queuedBatch, rules settleRules) (context.Context, func()) {
	lease := q.lease
	select {
	case <-lease.Committed():
		return ctx, func() {}
	default:
	}
	if rules.deleteFirst || slices.ContainsFunc(q.msgs, func(m pgqueue.Message) bool { return m.Group != "" }) {
		lease.Wait() //nolint:errcheck // runBatch reads it from lease.Err
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-lease.Committed():
			if err := lease.Err(); err != nil {
				cancel(err)
			}
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}

// leaseFailed notes a batch whose claim's commit failed, before its run or
// after it (ran as invocation invID, 0 if not): nothing of it is settled
// or recorded. The line names the dropped run's invocation, whose
// messages run again in the same delivery (their attempt not counted).
func (d *dispatcher) leaseFailed(q queuedBatch, invID int64) {
	ev := d.log.Warn().Err(q.lease.Err()).Int("messages", len(q.msgs)).Bool("ran", invID != 0)
	if invID == 0 {
		ev.Msg("claim not committed: the batch is not run; its messages will be delivered again")
		return
	}
	ev.Str("invocation", strconv.FormatInt(invID, 10)).
		Msg("claim not committed: the batch's run (stopped if it was still running) is dropped; its messages will be delivered again")
}

// settle carries out a plan of a batch that ran, with the emits that go
// out and the invocation record, in one transaction: without emits one
// call by the queue's id (commitByID), with them a pgqueue.Batch
// (Engine.commit). It fills in the record's counts. When a lease turned
// out no longer current (the lease expired and the message was
// redelivered; the exact settlement fails with ErrStaleReceipt), it
// settles what it still can in an explicit transaction instead
// (settleTx).
func (d *dispatcher) settle(ctx context.Context, b queueBatch, rules settleRules, p settlePlan, res runtime.Result, rec *invocationRecord) error {
	emits := selectEmits(res, succeeded(res))
	rec.count(p)
	var err error
	if len(emits) == 0 {
		// The common case: one call, on the queue's worker on Citus.
		err = d.commitByID(ctx, p, []*invocationRecord{rec})
	} else {
		// Emits go to other queues (on Citus, other shards): a pgqueue.Batch,
		// one transaction that the coordinator runs.
		fail := func(msg string) func(*pgqueue.Batch) {
			res = failBatch(res, msg)
			p = planSettlement(rules, b, res, nil)
			rec.setResult(res)
			rec.count(p)
			return d.queueSettlement(p)
		}
		err = d.e.commitOrRefuse(ctx, d.queueSettlement(p), emits, rec, fail)
	}
	if errors.Is(err, pgqueue.ErrStaleReceipt) {
		err = d.settleTx(ctx, b, rules, p, res, rec)
	}
	if err == nil {
		d.wakeForRetries(p)
	}
	return err
}

// wakeForRetries makes the claim loop look again when the soonest retry
// of plan p comes due.
func (d *dispatcher) wakeForRetries(p settlePlan) {
	if len(p.retries) == 0 {
		return
	}
	soonest := p.retries[0].Delay
	for _, n := range p.retries[1:] {
		soonest = min(soonest, n.Delay)
	}
	d.wakeAfter(soonest)
}

// queueSettlement returns what adds plan p's statements to a batch.
func (d *dispatcher) queueSettlement(p settlePlan) func(*pgqueue.Batch) {
	return func(bt *pgqueue.Batch) {
		bt.Ack(d.a.Account, d.a.Queue, p.acks)
		bt.Nack(d.a.Account, d.a.Queue, p.retries)
		bt.Fail(d.a.Account, d.a.Queue, p.fails)
	}
}

// settleTx is settle's slow path, for a batch some of whose leases are no
// longer current: in one explicit transaction it settles the messages it
// still holds, sends the emits of those it acked (and those without for),
// and records exactly that. An emit the database refuses rolls it all
// back, and the batch is settled as failed (invalid_output) instead.
func (d *dispatcher) settleTx(ctx context.Context, b queueBatch, rules settleRules, p settlePlan, res runtime.Result, rec *invocationRecord) error {
	a, q := d.a, d.e.cfg.Queue
	tx, err := d.e.cfg.Pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit, a no-op
	acked, err := q.AckTx(ctx, tx, a.Account, a.Queue, p.acks)
	if err != nil {
		return err
	}
	retried, err := q.NackTx(ctx, tx, a.Account, a.Queue, p.retries)
	if err != nil {
		return err
	}
	dead, err := q.FailTx(ctx, tx, a.Account, a.Queue, p.fails)
	if err != nil {
		return err
	}
	done := make(map[string]bool, len(acked))
	for _, s := range acked {
		done[strconv.FormatInt(s, 10)] = true
	}
	ok := succeeded(res)
	emits := selectEmits(res, func(id string) bool { return ok(id) && (rules.deleteFirst || done[id]) })
	var notes sentNotes
	for _, e := range emits {
		if e.Topic != "" {
			var copies int
			copies, err = q.PublishTx(ctx, tx, a.Account, e.Topic, e.Body, e.Headers)
			notes.published(e.Topic, copies)
		} else {
			var seq int64
			seq, err = q.SendTx(ctx, tx, a.Account, e.Queue, pgqueue.NewMessage{Body: e.Body, Headers: e.Headers, Delay: e.Delay, DedupKey: e.DedupKey, Group: e.Group})
			notes.sent(e.Queue, seq)
		}
		if err != nil {
			if msg := emitRefusal(err); msg != "" {
				_ = tx.Rollback(ctx)
				res = failBatch(res, msg)
				rec.setResult(res)
				return d.settle(ctx, b, rules, planSettlement(rules, b, res, nil), res, rec)
			}
			return err
		}
	}
	rec.acked, rec.retried, rec.dead, rec.emitted, rec.emits = p.preAcked+len(acked), len(retried), p.preDead+len(dead), len(emits), emits
	if len(emits) > 0 {
		// What pgqueue.Batch.NoteSent notes, for the record's emitted_messages.
		if _, err := tx.Exec(ctx, "SELECT set_config($1, $2, true)", pgqueue.SentSetting, notes.json()); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, d.e.q.Get("insert_invocation"), rec.args()...); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	refused := len(p.acks) - len(acked) + len(p.retries) - len(retried) + len(p.fails) - len(dead)
	d.log.Warn().Int("refused", refused).Int("acked", len(acked)).
		Msg("acks refused: some leases of the batch were no longer current, the messages were redelivered (turn lease extension on, or raise the visibility timeout); settled what was left")
	return nil
}

// firstError is the error an invocation record keeps: the batch failure's,
// else the first failed message's.
func firstError(res runtime.Result) string {
	if res.Failure != nil {
		return res.Failure.Message
	}
	for _, m := range res.Messages {
		if m.Error != "" {
			return m.Error
		}
	}
	return ""
}

func outcomeOf(res runtime.Result) string {
	switch {
	case res.Failure != nil:
		return OutcomeFailure
	case res.OK():
		return OutcomeSuccess
	case allFailed(res):
		return OutcomeFailure
	default:
		return OutcomePartialFailure
	}
}

// extendLeases keeps a batch leased while the function runs, renewing at
// a third of the lease; it returns a func that stops it.
func (d *dispatcher) extendLeases(ctx context.Context, leases []pgqueue.Ack) (stop func()) {
	lease := d.a.lease()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(lease / 3)
		defer t.Stop()
		ext := make([]pgqueue.Nack, len(leases))
		for i, l := range leases {
			ext[i] = pgqueue.Nack{Sequence: l.Sequence, Receipt: l.Receipt, Delay: lease}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := d.e.cfg.Queue.Nack(ctx, d.a.Account, d.a.Queue, ext); err != nil && !errors.Is(err, context.Canceled) {
					d.log.Warn().Err(err).Msg("lease extension failed")
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// release makes leased messages visible again at once (their receive
// counts stay).
func (d *dispatcher) release(ctx context.Context, nacks []pgqueue.Nack) {
	if len(nacks) == 0 {
		return
	}
	if _, err := d.e.cfg.Queue.Nack(ctx, d.a.Account, d.a.Queue, nacks); err != nil {
		d.log.Error().Err(err).Msg("releasing leases failed; they will expire instead")
	}
}
