package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/client"
)

func runTriggers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "triggers", []subcommand{
		{"list", "[--function F] [--queue Q]", "list the queue, DLQ and cron triggers", triggersList},
		{"get", "NAME", "show one trigger, every setting", triggersGet},
		{"enable", "NAME", "run the trigger again (every server follows within a second)", triggersEnable},
		{"disable", "NAME", "stop the trigger taking batches; running ones finish", triggersDisable},
		{"delete", "NAME", "delete a trigger (its invocations stay in the log under its name)", triggersDelete},
	}, args, stdout, stderr)
}

// triggerWhat says what a trigger runs on, in a few words.
func triggerWhat(t client.Trigger) string {
	switch {
	case t.Kind == "cron" && t.Function == "":
		return "cron " + t.CronSpec + " -> queue " + t.Queue
	case t.Kind == "cron":
		return "cron " + t.CronSpec
	case t.DLQ:
		return "dlq of " + t.Queue
	default:
		return "queue " + t.Queue
	}
}

func enabledWord(on *bool) string {
	if on == nil || *on {
		return "enabled"
	}
	return "disabled"
}

func triggersList(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("triggers list", "[--function F] [--queue Q]")
	fn := f.String("function", "", "only the triggers of this function")
	queue := f.String("queue", "", "only the triggers of this queue")
	_, c, err := f.start(args, stdout)
	if err != nil {
		return err
	}
	all, err := c.Triggers.List(ctx)
	if err != nil {
		return err
	}
	ts := []client.Trigger{}
	for _, t := range all {
		if (*fn == "" || t.Function == *fn) && (*queue == "" || t.Queue == *queue) {
			ts = append(ts, t)
		}
	}
	return f.output(stdout, map[string][]client.Trigger{"triggers": ts}, func(w io.Writer) error {
		if len(ts) == 0 {
			_, err := fmt.Fprintln(w, "no triggers (deploy a manifest with `sluice deploy`)")
			return err
		}
		rows := make([][]string, len(ts))
		for i, t := range ts {
			rows[i] = []string{t.Name, t.Kind, orDash(t.Function), triggerWhat(t), enabledWord(t.Enabled), t.Source}
		}
		return table(w, "NAME\tKIND\tFUNCTION\tON\tSTATE\tSOURCE", rows)
	})
}

func triggersGet(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("triggers get", "NAME")
	pos, c, err := f.start(args, stdout, "NAME")
	if err != nil {
		return err
	}
	t, err := c.Triggers.Get(ctx, pos[0])
	if err != nil {
		return err
	}
	return f.output(stdout, t, func(w io.Writer) error {
		kv := []string{"name", t.Name, "kind", t.Kind, "function", orDash(t.Function), "alias", orDash(t.Alias),
			"on", triggerWhat(t), "state", enabledWord(t.Enabled), "source", t.Source}
		if t.Kind == "queue" {
			kv = append(kv, "batch size", strconv.Itoa(t.BatchSize),
				"batch window", (time.Duration(t.BatchWindowMS) * time.Millisecond).String(),
				"concurrency", strconv.Itoa(t.Concurrency), "ack policy", t.AckPolicy,
				"backoff", (time.Duration(t.BackoffInitialMS)*time.Millisecond).String()+" to "+(time.Duration(t.BackoffMaxMS)*time.Millisecond).String(),
				"lease extension", strconv.FormatBool(t.LeaseExtension == nil || *t.LeaseExtension))
		} else {
			kv = append(kv, "schedule", t.CronSpec, "time zone", orDash(t.Timezone))
			if len(t.EnqueueBody) > 0 {
				kv = append(kv, "enqueues", string(t.EnqueueBody))
			}
		}
		kv = append(kv, "updated", stamp(t.UpdatedAt),
			"invocations", "sluice invocations --trigger "+t.Name)
		return fields(w, kv...)
	})
}

func triggersEnable(ctx context.Context, args []string, stdout, _ io.Writer) error {
	return triggersSetEnabled(ctx, args, stdout, true)
}

func triggersDisable(ctx context.Context, args []string, stdout, _ io.Writer) error {
	return triggersSetEnabled(ctx, args, stdout, false)
}

func triggersSetEnabled(ctx context.Context, args []string, stdout io.Writer, enabled bool) error {
	verb := map[bool]string{true: "enable", false: "disable"}[enabled]
	f := newCLIFlags("triggers "+verb, "NAME")
	pos, c, err := f.start(args, stdout, "NAME")
	if err != nil {
		return err
	}
	var changed bool
	if enabled {
		changed, err = c.Triggers.Enable(ctx, pos[0])
	} else {
		changed, err = c.Triggers.Disable(ctx, pos[0])
	}
	if err != nil {
		return err
	}
	msg := "trigger %s %sd (running servers follow within their reload interval, 1s by default)"
	if !changed {
		msg = "trigger %s was already %sd"
	}
	return done(f, stdout, map[string]any{"name": pos[0], "enabled": enabled, "changed": changed}, msg, pos[0], verb)
}

func triggersDelete(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("triggers delete", "NAME")
	pos, c, err := f.start(args, stdout, "NAME")
	if err != nil {
		return err
	}
	if err := c.Triggers.Delete(ctx, pos[0]); err != nil {
		return err
	}
	return done(f, stdout, map[string]any{"name": pos[0], "deleted": true}, "deleted trigger %s", pos[0])
}
