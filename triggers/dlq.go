package triggers

import (
	"context"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/runtime"
)

// startDLQDispatcher runs a dead-letter handler: batches of a queue's dead
// letters go to the function; the ones it succeeds on are deleted from the
// DLQ, the others stay there. Dead letters carry no lease, so one process
// at a time works a DLQ trigger: the one holding its advisory lock. After a
// batch with failures it waits (the trigger's backoff) before the next.
func (e *Engine) startDLQDispatcher(a *active, fn *runtime.Function) *dispatcher {
	ctx, cancel := context.WithCancel(context.Background())
	d := &dispatcher{
		e: e, a: a, fn: fn, cancel: cancel, stopped: make(chan struct{}), due: make(chan struct{}, 1),
		log: e.log.With().Str("trigger", a.Name).Str("queue", a.Queue).Str("function", a.Function).
			Int("version", a.version).Bool("dlq", true).Logger(),
	}
	go func() {
		defer close(d.stopped)
		wait, failures := e.cfg.PollMax, 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			handled, failed, err := e.runDLQBatch(ctx, d)
			switch {
			case err != nil:
				d.log.Error().Err(err).Msg("dead-letter batch failed")
				wait = e.cfg.PollMax
			case failed > 0:
				failures++
				wait = max(d.a.backoff(failures), e.cfg.PollMin)
			case handled > 0:
				failures, wait = 0, 0
			default:
				failures, wait = 0, e.cfg.PollMax
			}
		}
	}()
	return d
}

func (e *Engine) runDLQBatch(ctx context.Context, d *dispatcher) (handled, failed int, err error) {
	a := d.a
	conn, err := e.cfg.Pool.Acquire(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Release()
	var locked bool
	key := e.cfg.Schema + ":dlq:" + strconv.FormatInt(a.ID, 10)
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtext($1))`, key).Scan(&locked); err != nil || !locked {
		return 0, 0, err
	}
	defer func() {
		if _, uerr := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext($1))`, key); uerr != nil {
			conn.Conn().Close(context.WithoutCancel(ctx)) // closing the session frees the lock
		}
	}()
	letters, err := e.cfg.Queue.ReceiveDLQ(ctx, a.Account, a.Queue, a.BatchSize)
	if err != nil || len(letters) == 0 {
		return 0, 0, err
	}
	invID, err := e.invocationID(ctx)
	if err != nil {
		return 0, 0, err // the letters stay in the DLQ for the next try
	}
	inv := runtime.Invocation{
		ID:       strconv.FormatInt(invID, 10),
		Trigger:  runtime.Trigger{Type: "dlq", Source: a.Queue, Name: a.Name},
		Messages: make([]runtime.Message, len(letters)),
	}
	for i, l := range letters {
		inv.Messages[i] = runtime.Message{ID: strconv.FormatInt(l.Sequence, 10), Attempt: l.ReceiveCount,
			CreatedAt: l.CreatedAt, Headers: l.Headers, Body: l.Body}
	}
	started := time.Now()
	res, err := d.fn.Invoke(e.runCtx, inv)
	if err != nil {
		return 0, 0, err
	}
	if err := checkEmits(a.capabilities.Emits, res.Emits); err != nil {
		res = failBatch(res, err.Error())
	}
	rec := invocationRecord{
		id: invID, trigger: a.Name,
		account: a.Account, function: a.Function, version: a.version, triggerID: a.ID,
		triggerType: "dlq", source: a.Queue, batchSize: len(letters), startedAt: started, messageIDs: make([]int64, len(letters)),
	}
	for i, l := range letters {
		rec.messageIDs[i] = l.Sequence
	}
	// A handled dead letter is deleted; the others stay for the next try.
	settle := func(res runtime.Result) func(*pgqueue.Batch) {
		rec.setResult(res)
		var handled []int64
		for i, l := range letters {
			if res.Messages[i].Outcome == runtime.Acked {
				handled = append(handled, l.Sequence)
			}
		}
		rec.acked, rec.retried = len(handled), len(letters)-len(handled)
		return func(b *pgqueue.Batch) { b.DeleteDLQ(a.Account, a.Queue, handled, nil) }
	}
	err = e.commitOrRefuse(context.WithoutCancel(ctx), settle(res), selectEmits(res, succeeded(res)), &rec, func(msg string) func(*pgqueue.Batch) {
		res = failBatch(res, msg)
		return settle(res)
	})
	if err != nil {
		return 0, 0, err
	}
	return rec.acked, rec.retried, nil
}
