package triggers

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

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
	// queue settings (queue triggers)
	visibility      time.Duration
	maxReceiveCount int
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

// dispatcher feeds one queue trigger's batches to its function, running up
// to Concurrency batches at once.
type dispatcher struct {
	e   *Engine
	a   *active
	fn  *runtime.Function
	log zerolog.Logger

	cancel  context.CancelFunc // stops claiming
	stopped chan struct{}      // closed when the claim loop and all batches are done
	// due wakes the claim loop when a retry this dispatcher scheduled comes
	// due, so an idle queue need not be polled often to retry on time.
	due chan struct{}
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
	slots := make(chan struct{}, d.a.Concurrency)
	var running sync.WaitGroup
	defer running.Wait()
	idle := d.e.cfg.PollMin
	for {
		// Take a slot first, so no lease is held while waiting for one.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		batch, err := d.claim(ctx, wake)
		if err != nil || len(batch) == 0 {
			<-slots
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
			continue
		}
		idle = d.e.cfg.PollMin
		running.Add(1)
		go func() {
			defer running.Done()
			defer func() { <-slots }()
			d.e.runQueueBatch(d, batch)
		}()
	}
}

// claim receives up to BatchSize messages; with a batch window it keeps
// receiving until the batch is full or the window has passed since the
// first message.
//
// A receive is never cancelled once started: cancelling the statement
// could lose the race with its commit and leave messages leased by nobody
// until their visibility timeout. Stopping the dispatcher (ctx) ends the
// batch window early instead, and the caller runs what was claimed.
func (d *dispatcher) claim(ctx context.Context, wake <-chan struct{}) ([]pgqueue.Message, error) {
	if ctx.Err() != nil {
		return nil, nil
	}
	receiveCtx := context.WithoutCancel(ctx)
	opts := pgqueue.ReceiveOptions{Max: d.a.BatchSize, VisibilityTimeout: d.a.lease()}
	batch, err := d.e.cfg.Queue.Receive(receiveCtx, d.a.Account, d.a.Queue, opts)
	if err != nil || len(batch) == 0 || d.a.BatchWindow <= 0 || len(batch) >= d.a.BatchSize {
		return batch, err
	}
	deadline := time.NewTimer(d.a.BatchWindow)
	defer deadline.Stop()
	for len(batch) < d.a.BatchSize {
		select {
		case <-deadline.C:
			return batch, nil
		case <-ctx.Done():
			return batch, nil // the caller runs or releases what it holds
		case <-wake:
		case <-time.After(min(d.a.BatchWindow/4+time.Millisecond, 50*time.Millisecond)):
		}
		opts.Max = d.a.BatchSize - len(batch)
		more, err := d.e.cfg.Queue.Receive(receiveCtx, d.a.Account, d.a.Queue, opts)
		if err != nil {
			return batch, nil
		}
		batch = append(batch, more...)
	}
	return batch, nil
}

// runQueueBatch invokes the function on a batch and settles every message:
// acks in one statement, retries with backoff, dead letters at once.
func (e *Engine) runQueueBatch(d *dispatcher, batch []pgqueue.Message) {
	a := d.a
	// The batch runs on the engine's context, not the dispatcher's: a
	// dispatcher that is replaced lets its batches finish.
	ctx := e.runCtx
	settleCtx := context.WithoutCancel(ctx)

	if a.AckPolicy == AckPolicyAckFirst {
		acks := make([]pgqueue.Ack, len(batch))
		for i, m := range batch {
			acks[i] = pgqueue.Ack{Sequence: m.Sequence, Receipt: m.Receipt}
		}
		if _, err := e.cfg.Queue.Ack(settleCtx, a.Account, a.Queue, acks); err != nil {
			d.log.Error().Err(err).Msg("ack_first: delete before invoking failed; leases will expire and redeliver")
			return
		}
	}

	inv := runtime.Invocation{
		ID:       e.newInvocationID(),
		Trigger:  runtime.Trigger{Type: "queue", Source: a.Queue},
		Messages: make([]runtime.Message, len(batch)),
	}
	for i, m := range batch {
		inv.Messages[i] = runtime.Message{ID: strconv.FormatInt(m.Sequence, 10), Attempt: m.ReceiveCount,
			CreatedAt: m.CreatedAt, Headers: m.Headers, Body: m.Body}
	}

	stopExtending := func() {}
	if a.LeaseExtension && a.AckPolicy != AckPolicyAckFirst {
		stopExtending = e.extendLeases(ctx, d, batch)
	}
	started := time.Now()
	res, err := d.fn.Invoke(ctx, inv)
	stopExtending()
	if err != nil || (res.Failure != nil && res.Failure.Kind == runtime.FailureCanceled) {
		// The engine is shutting down (or the function was closed under
		// us): release the leases so another process takes the batch now.
		if a.AckPolicy != AckPolicyAckFirst {
			e.release(settleCtx, d, batch)
		}
		if err != nil {
			d.log.Warn().Err(err).Str("invocation", inv.ID).Msg("batch not run; leases released")
		}
		return
	}

	rec := invocationRecord{
		account: a.Account, function: a.Function, version: a.version, triggerID: a.ID,
		triggerType: "queue", source: a.Queue, batchSize: len(batch), startedAt: started,
		duration: res.Duration, stderr: res.Stderr, messageIDs: make([]int64, len(batch)),
	}
	if res.Failure != nil {
		rec.failureKind, rec.err = string(res.Failure.Kind), res.Failure.Message
	}

	var acks []pgqueue.Ack
	var nacks []pgqueue.Nack
	var fails []pgqueue.Failure
	for i, m := range batch {
		rec.messageIDs[i] = m.Sequence
		r := res.Messages[i]
		switch {
		case a.AckPolicy == AckPolicyAckFirst:
			if r.Outcome == runtime.Acked {
				rec.acked++
			} else {
				rec.dead++ // deleted before the run: the failure is only logged
			}
		case r.Outcome == runtime.Acked:
			acks = append(acks, pgqueue.Ack{Sequence: m.Sequence, Receipt: m.Receipt})
		case r.Outcome == runtime.Permanent:
			fails = append(fails, pgqueue.Failure{Sequence: m.Sequence, Receipt: m.Receipt, Reason: ReasonPermanent, Error: r.Error})
		case a.AckPolicy == AckPolicyRejectOnError:
			fails = append(fails, pgqueue.Failure{Sequence: m.Sequence, Receipt: m.Receipt, Reason: ReasonRejected, Error: r.Error})
		case m.ReceiveCount >= a.maxReceiveCount:
			fails = append(fails, pgqueue.Failure{Sequence: m.Sequence, Receipt: m.Receipt, Reason: ReasonMaxReceiveCount, Error: r.Error})
		default:
			delay := r.RetryAfter
			if delay <= 0 {
				delay = a.backoff(m.ReceiveCount)
			}
			nacks = append(nacks, pgqueue.Nack{Sequence: m.Sequence, Receipt: m.Receipt, Delay: delay, Error: r.Error})
		}
		if rec.err == "" && r.Error != "" {
			rec.err = r.Error
		}
	}
	if len(acks) > 0 {
		done, err := e.cfg.Queue.Ack(settleCtx, a.Account, a.Queue, acks)
		rec.acked += len(done)
		if err != nil {
			d.log.Error().Err(err).Int("messages", len(acks)).Msg("ack failed; the messages will be redelivered")
		} else if len(done) < len(acks) {
			d.log.Warn().Int("refused", len(acks)-len(done)).
				Msg("acks refused: the leases had expired and the messages were redelivered (turn lease extension on, or raise the visibility timeout)")
		}
	}
	if len(nacks) > 0 {
		soonest := nacks[0].Delay
		for _, n := range nacks[1:] {
			soonest = min(soonest, n.Delay)
		}
		d.wakeAfter(soonest)
		done, err := e.cfg.Queue.Nack(settleCtx, a.Account, a.Queue, nacks)
		rec.retried += len(done)
		if err != nil {
			d.log.Error().Err(err).Int("messages", len(nacks)).Msg("retry scheduling failed; leases will expire instead")
		}
	}
	if len(fails) > 0 {
		done, err := e.cfg.Queue.Fail(settleCtx, a.Account, a.Queue, fails)
		rec.dead += len(done)
		if err != nil {
			d.log.Error().Err(err).Int("messages", len(fails)).Msg("dead-lettering failed; leases will expire instead")
		}
	}
	rec.outcome = outcomeOf(res)
	e.record(rec)
	if e.cfg.OnBatch != nil {
		created := make([]time.Time, len(batch))
		for i, m := range batch {
			created[i] = m.CreatedAt
		}
		e.cfg.OnBatch(BatchEvent{Account: a.Account, Trigger: a.Name, Queue: a.Queue, Function: a.Function,
			Version: a.version, Started: started, Duration: res.Duration, Outcome: rec.outcome,
			Acked: rec.acked, Retried: rec.retried, Dead: rec.dead, CreatedAt: created})
	}
	ev := d.log.Debug()
	if rec.outcome != "success" {
		ev = d.log.Warn().Str("error", rec.err)
	}
	ev.Str("invocation", inv.ID).Int("batch", len(batch)).Int("acked", rec.acked).Int("retried", rec.retried).
		Int("dead", rec.dead).Float64("duration_ms", float64(res.Duration.Microseconds())/1000).Msg(rec.outcome)
}

func outcomeOf(res runtime.Result) string {
	switch {
	case res.Failure != nil:
		return "failure"
	case res.OK():
		return "success"
	default:
		return "partial_failure"
	}
}

// extendLeases keeps the batch leased while the function runs, renewing at
// a third of the lease; it returns a func that stops it.
func (e *Engine) extendLeases(ctx context.Context, d *dispatcher, batch []pgqueue.Message) (stop func()) {
	lease := d.a.lease()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(lease / 3)
		defer t.Stop()
		ext := make([]pgqueue.Nack, len(batch))
		for i, m := range batch {
			ext[i] = pgqueue.Nack{Sequence: m.Sequence, Receipt: m.Receipt, Delay: lease}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := e.cfg.Queue.Nack(ctx, d.a.Account, d.a.Queue, ext); err != nil && !errors.Is(err, context.Canceled) {
					d.log.Warn().Err(err).Msg("lease extension failed")
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// release makes a batch visible again at once (its receive count stays).
func (e *Engine) release(ctx context.Context, d *dispatcher, batch []pgqueue.Message) {
	nacks := make([]pgqueue.Nack, len(batch))
	for i, m := range batch {
		nacks[i] = pgqueue.Nack{Sequence: m.Sequence, Receipt: m.Receipt}
	}
	if _, err := e.cfg.Queue.Nack(ctx, d.a.Account, d.a.Queue, nacks); err != nil {
		d.log.Error().Err(err).Msg("releasing leases failed; they will expire instead")
	}
}
