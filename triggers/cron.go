package triggers

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/runtime"
)

// cronRunner runs one cron trigger's ticks. Every process schedules every
// tick; the first to insert (trigger, scheduled_time) into cron_ticks runs
// it, so a tick runs once however many processes are up.
type cronRunner struct {
	fn      *runtime.Function // nil for a trigger that enqueues
	cancel  context.CancelFunc
	stopped chan struct{}
}

func (c *cronRunner) stop()                       { c.cancel() }
func (c *cronRunner) done() <-chan struct{}       { return c.stopped }
func (c *cronRunner) function() *runtime.Function { return c.fn }

func (e *Engine) startCron(a *active, fn *runtime.Function) (*cronRunner, error) {
	sched, err := ParseSchedule(a.CronSpec)
	if err != nil {
		return nil, err
	}
	loc, err := time.LoadLocation(a.Timezone)
	if err != nil {
		return nil, fmt.Errorf("cron time zone %q: %w", a.Timezone, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &cronRunner{fn: fn, cancel: cancel, stopped: make(chan struct{})}
	log := e.log.With().Str("trigger", a.Name).Str("schedule", a.CronSpec).Logger()
	go func() {
		defer close(c.stopped)
		next := sched.Next(time.Now().In(loc))
		for {
			timer := time.NewTimer(time.Until(next))
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			e.tick(ctx, a, fn, next, log)
			next = sched.Next(next)
		}
	}()
	return c, nil
}

// tick claims and runs one scheduled time of a cron trigger.
func (e *Engine) tick(ctx context.Context, a *active, fn *runtime.Function, at time.Time, log zerolog.Logger) {
	tag, err := e.cfg.Pool.Exec(ctx, e.q.Get("claim_tick"), a.ID, at, e.cfg.Node)
	if err != nil {
		log.Error().Err(err).Time("scheduled_time", at).Msg("claiming cron tick failed; tick skipped here")
		return
	}
	if tag.RowsAffected() == 0 {
		return // another process runs this tick
	}
	if fn == nil {
		_, err := e.cfg.Queue.Send(ctx, a.Account, a.Queue, pgqueue.NewMessage{
			Body:     a.EnqueueBody,
			DedupKey: "cron:" + strconv.FormatInt(a.ID, 10) + ":" + strconv.FormatInt(at.Unix(), 10),
		})
		if err != nil {
			log.Error().Err(err).Str("queue", a.Queue).Msg("cron enqueue failed")
		}
		return
	}
	body, _ := json.Marshal(map[string]string{"schedule": a.CronSpec, "scheduled_time": at.UTC().Format(time.RFC3339)})
	invID, err := e.invocationID(ctx)
	if err != nil {
		log.Error().Err(err).Time("scheduled_time", at).Msg("cron invocation not run")
		return
	}
	inv := runtime.Invocation{
		ID:      strconv.FormatInt(invID, 10),
		Trigger: runtime.Trigger{Type: "cron", Source: a.Name, Name: a.Name},
		Messages: []runtime.Message{{
			ID: strconv.FormatInt(at.Unix(), 10), Attempt: 1, CreatedAt: at, Body: body,
		}},
	}
	started := time.Now()
	res, err := fn.Invoke(e.runCtx, inv)
	if err != nil {
		log.Error().Err(err).Msg("cron invocation not run")
		return
	}
	if err := checkEmits(a.capabilities.Emits, res.Emits); err != nil {
		res = failBatch(res, err.Error())
	}
	rec := invocationRecord{
		id: invID, trigger: a.Name,
		account: a.Account, function: a.Function, version: a.version, triggerID: a.ID,
		triggerType: "cron", source: a.Name, batchSize: 1, startedAt: started, messageIDs: []int64{at.Unix()},
	}
	count := func(res runtime.Result) {
		rec.setResult(res)
		rec.acked, rec.dead = 0, 0
		if res.OK() {
			rec.acked = 1
		} else {
			rec.dead = 1 // a cron tick is not retried; the next tick comes
		}
	}
	count(res)
	// The tick has nothing to settle: its emits and record commit together.
	err = e.commitOrRefuse(context.WithoutCancel(ctx), nil, selectEmits(res, succeeded(res)), &rec, func(msg string) func(*pgqueue.Batch) {
		res = failBatch(res, msg)
		count(res)
		return nil
	})
	if err != nil {
		log.Error().Err(err).Msg("recording the cron invocation failed; what it emitted was not sent")
		return
	}
	if rec.outcome != "success" {
		log.Warn().Str("error", rec.err).Str("invocation", inv.ID).Msg("cron invocation failed")
	}
}
