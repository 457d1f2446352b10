package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/cmd/sluice/internal/relaxedjson"
	"github.com/sluicehq/sluice/wire"
)

const functionsInvokeArgs = "NAME [--alias A | --version V] (--body JSON [--body JSON ...] | --file batch.json) [--dry-run]"

// functionsInvoke runs a deployed function once through the API (`sluice
// invoke` runs a local .wasm file instead).
func functionsInvoke(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("functions invoke", functionsInvokeArgs)
	var o client.InvokeOptions
	var bodies listFlag
	f.StringVar(&o.Alias, "alias", "", "run the version this alias points at (default live)")
	f.IntVar(&o.Version, "version", 0, "run this version")
	f.Var(&bodies, "body", "a message body as JSON or relaxed {key:value} (repeat for more messages)")
	file := f.String("file", "", `read the batch from FILE (- for stdin): {"messages": [{"body": ..., "headers": {...}}]}, {"bodies": [...]}, a JSON array of bodies, or a sluice invoke input such as the batch.json of sluice new (its ids, attempts and trigger are not sent)`)
	f.BoolVar(&o.DryRun, "dry-run", false, "run without side effects: return the emits without sending them, keep key-value writes to the run, refuse HTTP calls")
	pos, err := f.parse(args, stdout, "NAME")
	if err != nil {
		return err
	}
	if o.Alias != "" && o.Version != 0 {
		return usageErrorf("give --alias or --version, not both")
	}
	if o.Version < 0 {
		return usageErrorf("--version %d: must be positive", o.Version)
	}
	if (len(bodies) == 0) == (*file == "") {
		return usageErrorf("give --body (repeatable) or --file")
	}
	for i, b := range bodies {
		body, err := relaxedjson.Parse(b)
		if err != nil {
			return usageErrorf("--body %d: %v (give JSON, or the relaxed form {key:value})", i+1, err)
		}
		o.Bodies = append(o.Bodies, body)
	}
	if *file != "" {
		b, err := readFileFlag("file", *file)
		if err != nil {
			return err
		}
		if err := parseInvokeFile(b, &o); err != nil {
			return usageErrorf("--file %s: %v", *file, err)
		}
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	res, err := c.Functions.Invoke(ctx, pos[0], o)
	if err != nil {
		return err
	}
	return f.output(stdout, res, func(w io.Writer) error {
		emitted := fmt.Sprintf("%d of %d sent", res.Emitted, len(res.Emits))
		if res.DryRun {
			emitted = fmt.Sprintf("%d (dry run: none sent)", len(res.Emits))
		}
		if err := fields(w, "invocation", strconv.FormatInt(res.InvocationID, 10)+" (sluice invocations get "+strconv.FormatInt(res.InvocationID, 10)+")",
			"function", res.Function+" version "+strconv.Itoa(res.Version),
			"outcome", outcomeText(client.Invocation{Outcome: res.Outcome, FailureKind: res.FailureKind}),
			"duration", fmt.Sprintf("%.1f ms", res.DurationMS),
			"error", orDash(res.Error),
			"emits", emitted); err != nil {
			return err
		}
		rows := make([][]string, len(res.Messages))
		for i, m := range res.Messages {
			rows[i] = []string{m.ID, m.Outcome, orDash(oneLine(m.Error, 80))}
		}
		fmt.Fprintln(w)
		if err := table(w, "MESSAGE\tOUTCOME\tERROR", rows); err != nil {
			return err
		}
		for _, e := range res.Emits {
			target := "queue " + e.Queue
			if e.Topic != "" {
				target = "topic " + e.Topic
			}
			fmt.Fprintf(w, "emit to %s: %s\n", target, oneLine(string(e.Body), 120))
		}
		if s := strings.TrimRight(res.Stderr, "\n"); s != "" {
			fmt.Fprintf(w, "\nstderr:\n%s\n", s)
		}
		return nil
	})
}

// parseInvokeFile reads a batch: {"messages": [...]}, {"bodies": [...]}
// or a bare JSON array of bodies. The messages may be a `sluice invoke`
// input's (the batch.json of `sluice new`): their ids and attempts, and
// the input's trigger, are accepted and not sent, since the server numbers
// the messages and records the run as an invoke.
func parseInvokeFile(b []byte, o *client.InvokeOptions) error {
	var arr []json.RawMessage
	if err := json.Unmarshal(b, &arr); err == nil {
		o.Bodies = append(o.Bodies, arr...)
		return nil
	}
	var doc struct {
		Messages []struct {
			wire.InvokeMessage
			ID      json.RawMessage `json:"id"`
			Attempt json.RawMessage `json:"attempt"`
		} `json:"messages"`
		Bodies  []json.RawMessage `json:"bodies"`
		Trigger json.RawMessage   `json:"trigger"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf(`%v (use {"messages": [{"body": ..., "headers": {...}}]}, {"bodies": [...]}, a JSON array of bodies, or a sluice invoke input)`, err)
	}
	if len(doc.Messages) > 0 && len(doc.Bodies) > 0 {
		return fmt.Errorf("give messages or bodies, not both")
	}
	o.Bodies = append(o.Bodies, doc.Bodies...)
	for _, m := range doc.Messages {
		o.Messages = append(o.Messages, m.InvokeMessage)
	}
	return nil
}
