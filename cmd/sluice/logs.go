package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/client"
)

// runLogs prints function logs (each invocation's captured stderr) and
// invocation outcomes from the invocation log, and with --follow goes on
// printing new ones as any server on the database records them.
func runLogs(ctx context.Context, args []string, stdout, _ io.Writer) error {
	return explain(logs(ctx, args, stdout))
}

func logs(ctx context.Context, args []string, stdout io.Writer) error {
	f := newCLIFlags("logs", "[--function F] [--trigger T] [--outcome O] [--since 10m] [--follow]")
	filter := addInvocationFilter(f.FlagSet, " (default: 10m, or only new ones with --follow)")
	var follow bool
	f.BoolVar(&follow, "follow", false, "keep printing new invocations until interrupted")
	f.BoolVar(&follow, "f", false, "short for --follow")
	if _, err := f.parse(args, stdout); err != nil {
		return err
	}
	if err := filter.check(); err != nil {
		return err
	}
	o := filter.logsOptions(follow)
	c, err := f.client()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	n := 0
	err = c.Logs.Stream(ctx, o, func(e client.LogEntry) error {
		n++
		if f.json {
			return enc.Encode(e.Invocation) // one JSON object a line
		}
		_, err := io.WriteString(stdout, formatLogEntry(e.Invocation))
		return err
	})
	if err == nil && n == 0 && !o.Follow && !f.json {
		_, err = fmt.Fprintf(stdout, "no invocations since %s (add --follow to wait for new ones)\n", o.Since.UTC().Format(time.RFC3339))
	}
	return err
}

// formatLogEntry is how `sluice logs` prints an invocation: each line the
// function wrote to stderr, then the outcome. Every line starts with the
// start time, the function and version, the trigger's name and the
// invocation id, so each can be looked up (`sluice invocations get ID`)
// and filtered on (`--trigger NAME`).
func formatLogEntry(v client.Invocation) string {
	var b strings.Builder
	prefix := fmt.Sprintf("%s %s@%d %s [%d] ", v.StartedAt.UTC().Format("2006-01-02T15:04:05.000Z"), v.Function, v.Version, v.Trigger, v.ID)
	for line := range strings.Lines(v.Stderr) {
		line = strings.TrimRight(line, "\r\n")
		if line != "" {
			b.WriteString(prefix + line + "\n")
		}
	}
	b.WriteString(prefix + outcomeText(v) + " batch=" + strconv.Itoa(v.BatchSize) +
		fmt.Sprintf(" acked=%d retried=%d dead=%d emitted=%d duration=%.1fms", v.Acked, v.Retried, v.Dead, v.Emitted, v.DurationMS))
	if v.Error != "" {
		b.WriteString(" error=" + strconv.Quote(oneLine(v.Error, 200)))
	}
	b.WriteString("\n")
	return b.String()
}
