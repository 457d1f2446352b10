package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/client"
)

func runInvocations(ctx context.Context, args []string, stdout, _ io.Writer) error {
	return explain(listInvocations(ctx, args, stdout))
}

func listInvocations(ctx context.Context, args []string, stdout io.Writer) error {
	f := newCLIFlags("invocations", "[--function F] [--outcome O] [--since DURATION] [--limit N]")
	var o client.InvocationsOptions
	f.StringVar(&o.Function, "function", "", "only this function's")
	f.StringVar(&o.Outcome, "outcome", "", "only success, partial_failure or failure")
	since := f.Duration("since", 0, "only those started within this long, e.g. 15m")
	f.IntVar(&o.Limit, "limit", 50, "show at most N (1-1000)")
	if _, err := f.parse(args, stdout); err != nil {
		return err
	}
	switch o.Outcome {
	case "", "success", "partial_failure", "failure":
	default:
		return usageErrorf("--outcome %q: use success, partial_failure or failure", o.Outcome)
	}
	if o.Limit < 1 || o.Limit > 1000 {
		return usageErrorf("--limit %d: must be 1 to 1000", o.Limit)
	}
	if *since < 0 {
		return usageErrorf("--since %s: must be positive", *since)
	}
	if *since > 0 {
		o.Since = time.Now().Add(-*since)
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
			rows[i] = []string{stamp(v.StartedAt), v.Function, strconv.Itoa(v.Version), v.TriggerType + ":" + v.Source,
				strconv.Itoa(v.BatchSize), v.Outcome, fmt.Sprintf("%.1f ms", v.DurationMS),
				fmt.Sprintf("%d/%d/%d", v.Acked, v.Retried, v.Dead), orDash(oneLine(v.Error, 60))}
		}
		return table(w, "STARTED\tFUNCTION\tVERSION\tTRIGGER\tBATCH\tOUTCOME\tDURATION\tACKED/RETRIED/DEAD\tERROR", rows)
	})
}
