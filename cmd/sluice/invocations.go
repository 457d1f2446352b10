package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/client"
)

// runInvocations lists invocations, or with `get ID` shows one.
func runInvocations(ctx context.Context, args []string, stdout, _ io.Writer) error {
	if len(args) > 0 && args[0] == "get" {
		return explain(getInvocation(ctx, args[1:], stdout))
	}
	return explain(listInvocations(ctx, args, stdout))
}

func listInvocations(ctx context.Context, args []string, stdout io.Writer) error {
	f := newCLIFlags("invocations", "[--function F] [--trigger T] [--outcome O] [--since DURATION] [--until TIME] [--before-id ID] [--limit N]\n       sluice invocations get ID")
	filter := addInvocationFilter(f.FlagSet, "")
	until := f.String("until", "", "only those started before this RFC 3339 time")
	beforeID := f.Int64("before-id", 0, "only those with an id below ID (the last of the previous page)")
	limit := f.Int("limit", 50, "show at most N (1-1000)")
	if _, err := f.parse(args, stdout); err != nil {
		return err
	}
	if err := filter.check(); err != nil {
		return err
	}
	o := filter.invocationsOptions()
	o.BeforeID, o.Limit = *beforeID, *limit
	if *until != "" {
		t, err := time.Parse(time.RFC3339Nano, *until)
		if err != nil {
			return usageErrorf("--until %q: use an RFC 3339 time such as 2026-11-30T12:00:00Z", *until)
		}
		o.Until = t
	}
	if o.Limit < 1 || o.Limit > 1000 {
		return usageErrorf("--limit %d: must be 1 to 1000", o.Limit)
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	invs, err := c.Invocations.List(ctx, o)
	if err != nil {
		return err
	}
	return f.output(stdout, map[string][]client.Invocation{"invocations": invs}, func(w io.Writer) error {
		if len(invs) == 0 {
			_, err := fmt.Fprintln(w, "no invocations")
			return err
		}
		rows := make([][]string, len(invs))
		for i, v := range invs {
			rows[i] = []string{strconv.FormatInt(v.ID, 10), stamp(v.StartedAt), v.Function, strconv.Itoa(v.Version), v.Trigger,
				strconv.Itoa(v.BatchSize), v.Outcome, fmt.Sprintf("%.1f ms", v.DurationMS),
				fmt.Sprintf("%d/%d/%d", v.Acked, v.Retried, v.Dead), orDash(oneLine(v.Error, 60))}
		}
		return table(w, "ID\tSTARTED\tFUNCTION\tVERSION\tTRIGGER\tBATCH\tOUTCOME\tDURATION\tACKED/RETRIED/DEAD\tERROR", rows)
	})
}

func getInvocation(ctx context.Context, args []string, stdout io.Writer) error {
	f := newCLIFlags("invocations get", "ID")
	pos, err := f.parse(args, stdout, "ID")
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(pos[0], 10, 64)
	if err != nil || id < 1 {
		return usageErrorf("invocation id %q: want a positive integer", pos[0])
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	v, err := c.Invocations.Get(ctx, id)
	if err != nil {
		return err
	}
	return f.output(stdout, v, func(w io.Writer) error {
		return fields(w, "id", strconv.FormatInt(v.ID, 10),
			"function", v.Function+" version "+strconv.Itoa(v.Version),
			"trigger", v.Trigger+" ("+v.TriggerType+" "+v.Source+")",
			"started", stamp(v.StartedAt),
			"duration", fmt.Sprintf("%.1f ms", v.DurationMS),
			"outcome", outcomeText(v),
			"batch", strconv.Itoa(v.BatchSize),
			"acked/retried/dead", fmt.Sprintf("%d/%d/%d", v.Acked, v.Retried, v.Dead),
			"emitted", strconv.Itoa(v.Emitted),
			"messages", strings.Trim(fmt.Sprint(v.MessageIDs), "[]"),
			"error", orDash(v.Error),
			"stderr", orDash(v.Stderr))
	})
}

// orEmpty returns prefix+s, or "" when s is empty.
func orEmpty(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// outcomeText is an invocation's outcome with its failure kind, e.g.
// "failure (timeout)".
func outcomeText(v client.Invocation) string {
	if v.FailureKind == "" {
		return v.Outcome
	}
	return v.Outcome + " (" + v.FailureKind + ")"
}
