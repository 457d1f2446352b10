package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/sluicehq/sluice/client"
)

func runQueues(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "queues", []subcommand{
		{"list", "[--live]", "list the queues (with --live, their counts)", queuesList},
		{"get", "NAME", "show a queue's settings and counts", queuesGet},
		{"stats", "NAME [--minutes 60]", "show a queue's sends, acks, DLQ moves and depth per minute", queuesStats},
		{"create", "NAME [--visibility-timeout 30] [--max-receive-count 5] ...", "create a queue", queuesCreate},
		{"update", "NAME [--visibility-timeout S] [--max-receive-count N] ...", "change a queue's settings", queuesUpdate},
		{"delete", "NAME", "delete a queue with its messages and dead letters (refused while another queue names it as its dead_letter_queue)", queuesDelete},
	}, args, stdout, stderr)
}

func queuesList(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("queues list", "[--live]")
	live := f.Bool("live", false, "add each queue's counts: ready, inflight, delayed, dlq, oldest ready age")
	_, c, err := f.start(args, stdout)
	if err != nil {
		return err
	}
	qs, err := c.Queues.List(ctx, client.ListQueuesOptions{Live: *live})
	if err != nil {
		return err
	}
	return f.output(stdout, map[string][]client.Queue{"queues": qs}, func(w io.Writer) error {
		if len(qs) == 0 {
			_, err := fmt.Fprintln(w, "no queues (create one with `sluice queues create NAME`)")
			return err
		}
		header := "NAME\tVISIBILITY\tMAX RECEIVES\tDELAY\tRETENTION"
		if *live {
			header += "\tREADY\tINFLIGHT\tDELAYED\tDLQ\tOLDEST READY"
		}
		rows := make([][]string, len(qs))
		for i, q := range qs {
			rows[i] = []string{q.Name, seconds(q.VisibilityTimeoutSeconds), strconv.Itoa(q.MaxReceiveCount),
				seconds(q.DelaySeconds), seconds(q.RetentionSeconds)}
			if *live {
				rows[i] = append(rows[i], statsCells(q.Stats)...)
			}
		}
		return table(w, header, rows)
	})
}

// statsCells are the count columns of a queue.
func statsCells(s *client.QueueStats) []string {
	if s == nil {
		return []string{"-", "-", "-", "-", "-"}
	}
	return []string{strconv.FormatInt(s.Ready, 10), strconv.FormatInt(s.Inflight, 10), strconv.FormatInt(s.Delayed, 10),
		strconv.FormatInt(s.DLQ, 10), fmt.Sprintf("%.1fs", s.OldestReadyAgeSeconds)}
}

// seconds formats a number of seconds for people: 30s, 5m, 4d.
func seconds(s int) string {
	switch {
	case s >= 86400 && s%86400 == 0:
		return strconv.Itoa(s/86400) + "d"
	case s >= 3600 && s%3600 == 0:
		return strconv.Itoa(s/3600) + "h"
	case s >= 60 && s%60 == 0:
		return strconv.Itoa(s/60) + "m"
	}
	return strconv.Itoa(s) + "s"
}

func queueOut(f *cliFlags, w io.Writer, q client.Queue, verb string) error {
	return f.output(w, q, func(w io.Writer) error {
		if verb != "" {
			fmt.Fprintf(w, "%s queue %s\n", verb, q.Name)
		}
		kv := []string{
			"name", q.Name,
			"visibility timeout", seconds(q.VisibilityTimeoutSeconds),
			"max receive count", strconv.Itoa(q.MaxReceiveCount),
			"delay", seconds(q.DelaySeconds),
			"retention", seconds(q.RetentionSeconds),
			"max message bytes", strconv.Itoa(q.MaxMessageBytes),
			"dedup window", seconds(q.DedupWindowSeconds),
		}
		if q.DeadLetterQueue != "" {
			kv = append(kv, "dead-letter queue", q.DeadLetterQueue)
		}
		if q.Fifo {
			kv = append(kv, "fifo", "true (every message needs a group)")
		}
		kv = append(kv, "created", stamp(q.CreatedAt))
		if s := q.Stats; s != nil {
			c := statsCells(s)
			kv = append(kv, "ready", c[0], "inflight", c[1], "delayed", c[2], "dlq", c[3], "oldest ready", c[4],
				"stored bytes", fmt.Sprintf("%d (dlq %d)", s.Bytes, s.DLQBytes))
			if s.Groups > 0 || s.GroupedWaiting > 0 {
				kv = append(kv, "groups", strconv.FormatInt(s.Groups, 10),
					"groups in flight", strconv.FormatInt(s.GroupsInflight, 10),
					"groups blocked", strconv.FormatInt(s.GroupsBlocked, 10),
					"waiting in groups", strconv.FormatInt(s.GroupedWaiting, 10))
			}
		}
		return fields(w, kv...)
	})
}

func queuesGet(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("queues get", "NAME")
	pos, c, err := f.start(args, stdout, "NAME")
	if err != nil {
		return err
	}
	q, err := c.Queues.Get(ctx, pos[0])
	if err != nil {
		return err
	}
	return queueOut(f, stdout, q, "")
}

// settingsFlags holds the queue setting flags; settings returns those
// given.
type settingsFlags struct {
	f      *cliFlags
	values map[string]*int
	dlq    *string
	fifo   *bool
}

// queueSettingFlags are the queue setting flags with their ranges.
var queueSettingFlags = []struct {
	flag, usage string
	lo, hi      int
}{
	{"visibility-timeout", "default lease of a received message, seconds (0-43200; default 30)", 0, 43200},
	{"max-receive-count", "deliveries before a message moves to the DLQ (1-1000; default 5)", 1, 1000},
	{"delay-seconds", "delay of every message sent, seconds (0-43200; default 0)", 0, 43200},
	{"retention-seconds", "how long messages are kept, seconds (60-1209600; default 345600)", 60, 1209600},
	{"max-message-bytes", "largest body, bytes of JSON (1-1048576; default 262144)", 1, 1 << 20},
	{"dedup-window-seconds", "how long a dedup key counts, seconds (0-86400; default 300)", 0, 86400},
}

func newSettingsFlags(f *cliFlags) *settingsFlags {
	s := &settingsFlags{f: f, values: map[string]*int{}}
	for _, q := range queueSettingFlags {
		s.values[q.flag] = f.Int(q.flag, 0, q.usage)
	}
	s.dlq = f.String("dead-letter-queue", "", "another queue that receives the dead letters as messages (\"\" on update: back to the DLQ table)")
	s.fifo = f.Bool("fifo", false, "require a group on every message sent, like an SQS FIFO queue (--fifo=false on update turns it off)")
	return s
}

func (s *settingsFlags) settings() (client.QueueSettings, int, error) {
	n := 0
	for _, q := range queueSettingFlags {
		if !s.f.set(q.flag) {
			continue
		}
		n++
		if v := *s.values[q.flag]; v < q.lo || v > q.hi {
			return client.QueueSettings{}, 0, usageErrorf("--%s %d: must be %d to %d", q.flag, v, q.lo, q.hi)
		}
	}
	pick := func(name string) *int {
		if s.f.set(name) {
			return s.values[name]
		}
		return nil
	}
	out := client.QueueSettings{
		VisibilityTimeoutSeconds: pick("visibility-timeout"),
		MaxReceiveCount:          pick("max-receive-count"),
		DelaySeconds:             pick("delay-seconds"),
		RetentionSeconds:         pick("retention-seconds"),
		MaxMessageBytes:          pick("max-message-bytes"),
		DedupWindowSeconds:       pick("dedup-window-seconds"),
	}
	if s.f.set("dead-letter-queue") {
		n++
		out.DeadLetterQueue = s.dlq
	}
	if s.f.set("fifo") {
		n++
		out.Fifo = s.fifo
	}
	return out, n, nil
}

func queuesCreate(ctx context.Context, args []string, stdout, _ io.Writer) error {
	return queueWrite(ctx, args, stdout, "create", "created", func(ctx context.Context, c *client.Client, name string, s client.QueueSettings) (client.Queue, error) {
		return c.Queues.Create(ctx, name, s)
	})
}

func queuesUpdate(ctx context.Context, args []string, stdout, _ io.Writer) error {
	return queueWrite(ctx, args, stdout, "update", "updated", func(ctx context.Context, c *client.Client, name string, s client.QueueSettings) (client.Queue, error) {
		return c.Queues.Update(ctx, name, s)
	})
}

func queueWrite(ctx context.Context, args []string, stdout io.Writer, verb, done string,
	call func(context.Context, *client.Client, string, client.QueueSettings) (client.Queue, error)) error {
	f := newCLIFlags("queues "+verb, "NAME [--visibility-timeout S] [--max-receive-count N] [--delay-seconds S] [--retention-seconds S] [--max-message-bytes N] [--dedup-window-seconds S] [--dead-letter-queue Q] [--fifo]")
	sf := newSettingsFlags(f)
	pos, err := f.parse(args, stdout, "NAME")
	if err != nil {
		return err
	}
	settings, n, err := sf.settings()
	if err != nil {
		return err
	}
	if verb == "update" && n == 0 {
		return usageErrorf("nothing to update: give at least one setting flag (see `sluice queues update -h`)")
	}
	if err := settings.Check(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	q, err := call(ctx, c, pos[0], settings)
	if err != nil {
		return err
	}
	return queueOut(f, stdout, q, done)
}

func queuesDelete(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("queues delete", "NAME")
	pos, c, err := f.start(args, stdout, "NAME")
	if err != nil {
		return err
	}
	if err := c.Queues.Delete(ctx, pos[0]); err != nil {
		return err
	}
	return done(f, stdout, map[string]any{"queue": pos[0], "deleted": true}, "deleted queue %s", pos[0])
}

func queuesStats(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("queues stats", "NAME [--minutes 60]")
	minutes := f.Int("minutes", 60, "show the last N minutes (1-1440)")
	pos, c, err := f.start(args, stdout, "NAME")
	if err != nil {
		return err
	}
	if *minutes < 1 || *minutes > client.MaxStatsMinutes {
		return usageErrorf("--minutes %d: must be 1 to %d", *minutes, client.MaxStatsMinutes)
	}
	ms, err := c.Queues.MinuteStats(ctx, pos[0], *minutes)
	if err != nil {
		return err
	}
	return f.output(stdout, map[string]any{"queue": pos[0], "minutes": ms}, func(w io.Writer) error {
		rows := make([][]string, len(ms))
		for i, m := range ms {
			rows[i] = []string{m.Minute.UTC().Format("2006-01-02 15:04"), strconv.FormatInt(m.Sends, 10),
				strconv.FormatInt(m.Acks, 10), strconv.FormatInt(m.DLQMoves, 10),
				sample(m.Ready), sample(m.Inflight), sample(m.Delayed), sample(m.DLQ)}
		}
		return table(w, "MINUTE (UTC)\tSENDS\tACKS\tDLQ MOVES\tREADY\tINFLIGHT\tDELAYED\tDLQ", rows)
	})
}

// sample formats a depth sample, "-" when none was taken.
func sample(n *int64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatInt(*n, 10)
}
