package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/cmd/sluice/internal/relaxedjson"
)

func runMQ(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "mq", []subcommand{
		{"send", sendUsage, "send a message, a batch of 1-10 given as a JSON array, or entries with their own options", mqSend},
		{"receive", "QUEUE [--max-messages N] [--wait-seconds S] [--visibility-timeout S] [--delete]", "receive (lease) messages", mqReceive},
		{"delete", "QUEUE SEQ [--receipt R]", "delete (ack) a message", mqDelete},
		{"visibility", "QUEUE SEQ --seconds S [--receipt R]", "change a message's visibility timeout (0: retry now)", mqVisibility},
		{"purge", "QUEUE", "delete every message of a queue", mqPurge},
		{"peek", "QUEUE [--max-messages N] [--after SEQ]", "read messages without leasing them", mqPeek},
		{"receive-dlq", "QUEUE [--max-messages N] [--after SEQ]", "read a queue's dead letters", mqReceiveDLQ},
		{"delete-dlq", "QUEUE SEQ", "delete a dead letter", mqDeleteDLQ},
		{"purge-dlq", "QUEUE", "delete every dead letter of a queue", mqPurgeDLQ},
		{"redrive", "QUEUE [--max-messages N | --sequences S1,S2,...]", "move dead letters back to their queue", mqRedrive},
	}, args, stdout, stderr)
}

// readFileFlag reads the file a flag names ("-" is stdin).
func readFileFlag(flag, file string) ([]byte, error) {
	var b []byte
	var err error
	if file == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	return b, nil
}

// readBody returns the message body or bodies of mq send: --body (strict
// or relaxed JSON) or --body-file (strict JSON; "-" is stdin).
func readBody(body, file string, bodySet bool) (json.RawMessage, error) {
	switch {
	case bodySet && file != "":
		return nil, usageErrorf("give --body or --body-file, not both")
	case bodySet:
		b, err := relaxedjson.Parse(body)
		if err != nil {
			return nil, usageErrorf("--body: %v (give JSON, or the relaxed form {key:value})", err)
		}
		return b, nil
	case file != "":
		b, err := readFileFlag("body-file", file)
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, usageErrorf("--body-file %s: not valid JSON: %v", file, err)
		}
		return v, nil
	}
	return nil, usageErrorf("missing --body JSON or --body-file FILE (or the BODY argument, or --entries FILE)")
}

// sendUsage is the argument summary of mq send.
const sendUsage = "QUEUE [BODY] | --body JSON | --body-file FILE | --entries FILE [--delay D] [--ttl D] [--header K=V]... [--dedup-key K] [--group G]"

// headerFlags collects repeated --header K=V flags.
type headerFlags map[string]string

func (h headerFlags) String() string { return "" }

func (h headerFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: use KEY=VALUE", v)
	}
	if _, dup := h[k]; dup {
		return fmt.Errorf("header %q is given twice: give each key once", k)
	}
	h[k] = val
	return nil
}

// durationFlag parses a duration given as Go duration ("30s", "5m") or
// whole seconds ("30"), in whole seconds within [min, max].
func durationFlag(name, v string, min, max time.Duration) (int, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.Atoi(v)
		if nerr != nil {
			return 0, usageErrorf("--%s %s: give a duration like 30s, 5m or 2h, or whole seconds", name, v)
		}
		d = time.Duration(n) * time.Second
	}
	if d%time.Second != 0 || d < min || d > max {
		return 0, usageErrorf("--%s %s: give whole seconds from %v to %v", name, v, min, max)
	}
	return int(d / time.Second), nil
}

// sendOptions reads the per-message flags of mq send.
func sendOptions(f *cliFlags, delay, delaySeconds int, ttl string, headers headerFlags, dedup, group string) (client.SendOptions, error) {
	o := client.SendOptions{DelaySeconds: delaySeconds, DedupKey: dedup, Group: group}
	if f.set("group") && (len(group) < 1 || len(group) > client.MaxDedupKeyLength) {
		return o, usageErrorf("--group: give 1 to %d characters", client.MaxDedupKeyLength)
	}
	if f.set("delay") {
		if f.set("delay-seconds") {
			return o, usageErrorf("give --delay or --delay-seconds, not both")
		}
		o.DelaySeconds = delay
	}
	if f.set("ttl") {
		n, err := durationFlag("ttl", ttl, time.Second, client.MaxTTLSeconds*time.Second)
		if err != nil {
			return o, err
		}
		o.TTLSeconds = n
	}
	if len(headers) > 0 {
		o.Headers = headers
	}
	return o, nil
}

func mqSend(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("mq send", sendUsage)
	body := f.String("body", "", "message body as JSON, or relaxed {key:value}; a JSON array sends each element as a message (1-10; wrap one array body as [[...]]); the BODY argument is the same")
	file := f.String("body-file", "", "read the body from FILE (strict JSON; - for stdin)")
	entries := f.String("entries", "", `read entries from FILE (- for stdin): {"entries": [{"body": ..., "headers": {"k": "v"}, "delay_seconds": 5, "expires_in_seconds": 60, "dedup_key": "...", "group": "..."}]} or the bare array, 1-1000 entries, each with its own options (the flags give defaults for the ones an entry leaves out)`)
	delaySeconds := f.Int("delay-seconds", 0, "keep the messages invisible that long, in seconds (0-43200)")
	delayText := f.String("delay", "", "keep the messages invisible that long, e.g. 30s or 5m (0s to 12h)")
	ttl := f.String("ttl", "", "time to live: the messages are never delivered after it, e.g. 5m (1s to 336h)")
	headers := headerFlags{}
	f.Var(headers, "header", "a header K=V stored with the messages (repeatable)")
	dedup := f.String("dedup-key", "", "deduplication key (single messages only)")
	group := f.String("group", "", "ordered group of the messages (1-128 characters): a group's messages are delivered in order, one at a time; required on a fifo queue")
	pos, err := f.parseOptional(args, stdout, 1, "QUEUE", "BODY")
	if err != nil {
		return err
	}
	delay := 0
	if f.set("delay") {
		if delay, err = durationFlag("delay", *delayText, 0, client.MaxDelaySeconds*time.Second); err != nil {
			return err
		}
	}
	opts, err := sendOptions(f, delay, *delaySeconds, *ttl, headers, *dedup, *group)
	if err != nil {
		return err
	}
	queue := pos[0]
	if *entries != "" {
		if len(pos) > 1 || f.set("body") || *file != "" {
			return usageErrorf("give --entries FILE or a body (BODY, --body, --body-file), not both")
		}
		if opts.DedupKey != "" {
			return usageErrorf("--dedup-key applies to a single message: give each entry its own dedup_key in --entries")
		}
		es, err := readEntries(*entries, opts)
		if err != nil {
			return err
		}
		c, err := f.client()
		if err != nil {
			return err
		}
		seqs, err := c.MQ.SendEntries(ctx, queue, es)
		if err != nil {
			return err
		}
		return sentOut(f, stdout, queue, seqs)
	}
	bodySet := f.set("body")
	if len(pos) > 1 {
		if bodySet || *file != "" {
			return usageErrorf("unexpected argument %q: give the body as BODY or with --body/--body-file, not both", pos[1])
		}
		*body, bodySet = pos[1], true
	}
	b, err := readBody(*body, *file, bodySet)
	if err != nil {
		return err
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	if b[0] != '[' {
		seq, err := c.MQ.Send(ctx, queue, b, opts)
		if err != nil {
			return err
		}
		return f.output(stdout, map[string]int64{"sequence": seq}, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "sent message %d to %s\n", seq, queue)
			return err
		})
	}
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return err
	}
	if len(items) < 1 || len(items) > client.MaxBatch {
		return usageErrorf("a JSON array sends a batch of 1 to %d messages, got %d (to send one message whose body is an array, wrap it: [[...]]; for more, use --entries FILE)", client.MaxBatch, len(items))
	}
	bodies := make([]any, len(items))
	for i, it := range items {
		bodies[i] = it
	}
	seqs, err := c.MQ.SendBatch(ctx, queue, bodies, opts)
	if err != nil {
		return err
	}
	return sentOut(f, stdout, queue, seqs)
}

// sentOut prints the sequences of a batch or entries send.
func sentOut(f *cliFlags, stdout io.Writer, queue string, seqs []int64) error {
	return f.output(stdout, map[string][]int64{"sequences": seqs}, func(w io.Writer) error {
		s := make([]string, len(seqs))
		for i, q := range seqs {
			s[i] = strconv.FormatInt(q, 10)
		}
		_, err := fmt.Fprintf(w, "sent %s to %s: %s\n", plural(len(seqs), "message"), queue, strings.Join(s, " "))
		return err
	})
}

// readEntries reads an --entries file: {"entries": [...]} or a bare array
// of entries (strict JSON, unknown fields refused), filling in the options
// the flags give where an entry has none.
func readEntries(file string, o client.SendOptions) ([]client.SendEntry, error) {
	b, err := readFileFlag("entries", file)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	var raws []json.RawMessage
	if len(b) > 0 && b[0] == '{' {
		var env struct {
			Entries []json.RawMessage `json:"entries"`
		}
		if err := strictJSON(b, &env); err != nil {
			return nil, usageErrorf(`--entries %s: %v (give {"entries": [...]} or an array of entries)`, file, err)
		}
		raws = env.Entries
	} else if err := strictJSON(b, &raws); err != nil {
		return nil, usageErrorf(`--entries %s: %v (give {"entries": [...]} or an array of entries)`, file, err)
	}
	if len(raws) < 1 || len(raws) > client.MaxEntries {
		return nil, usageErrorf("--entries %s: give 1 to %d entries, got %d", file, client.MaxEntries, len(raws))
	}
	es := make([]client.SendEntry, len(raws))
	for i, r := range raws {
		if err := strictJSON(r, &es[i]); err != nil {
			return nil, usageErrorf(`--entries %s: entries[%d]: %v (use {"body": ..., "headers": {"k": "v"}, "delay_seconds": 0, "expires_in_seconds": 60, "dedup_key": "...", "group": "..."})`, file, i, err)
		}
		e := &es[i]
		if e.Headers == nil {
			e.Headers = o.Headers
		}
		if e.DelaySeconds == 0 {
			e.DelaySeconds = o.DelaySeconds
		}
		if e.ExpiresInSeconds == 0 {
			e.ExpiresInSeconds = o.TTLSeconds
		}
		if e.Group == "" {
			e.Group = o.Group
		}
	}
	return es, nil
}

// strictJSON decodes one JSON value into v, refusing unknown fields and
// trailing data.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}

// messagesOut prints received or peeked messages.
func messagesOut(f *cliFlags, w io.Writer, queue string, msgs []client.Message) error {
	return pageOut(f, w, queue, client.MessagePage{Messages: msgs}, "", 0)
}

// pageOut prints a page of messages: a received one, or a peeked one
// (command "peek", max messages) whose Next says how to ask for the next
// page.
func pageOut(f *cliFlags, w io.Writer, queue string, p client.MessagePage, command string, max int) error {
	return f.output(w, p, func(w io.Writer) error {
		if len(p.Messages) == 0 {
			_, err := fmt.Fprintf(w, "no messages in %s\n", queue)
			return err
		}
		rows := make([][]string, len(p.Messages))
		for i, m := range p.Messages {
			rows[i] = []string{strconv.FormatInt(m.Sequence, 10), strconv.Itoa(m.ReceiveCount), stamp(m.CreatedAt),
				stamp(m.VisibleAt), orDash(m.Receipt), orDash(m.Group), headersText(m.Headers), string(m.Body)}
		}
		if err := table(w, "SEQ\tRECEIVES\tCREATED\tVISIBLE AT\tRECEIPT\tGROUP\tHEADERS\tBODY", rows); err != nil {
			return err
		}
		return nextPage(w, command, queue, max, p.Next)
	})
}

// nextPage tells how to read the page after this one, of max messages,
// if more may follow.
func nextPage(w io.Writer, command, queue string, max int, next int64) error {
	if next == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "more may follow: sluice mq %s %s --max-messages %d --after %d\n", command, queue, max, next)
	return err
}

// headersText shows a message's headers compactly ("-" when none).
func headersText(h json.RawMessage) string {
	if len(h) == 0 || string(h) == "null" {
		return "-"
	}
	var b bytes.Buffer
	if json.Compact(&b, h) != nil {
		return string(h)
	}
	return b.String()
}

func mqReceive(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("mq receive", "QUEUE [--max-messages N] [--wait-seconds S] [--visibility-timeout S] [--delete]")
	var o client.ReceiveOptions
	f.IntVar(&o.MaxMessages, "max-messages", 1, "messages to receive at most (1-10)")
	f.IntVar(&o.WaitSeconds, "wait-seconds", 0, "wait up to S seconds for a message (0-20)")
	f.IntVar(&o.VisibilityTimeoutSeconds, "visibility-timeout", 0, "lease the messages for S seconds (1-43200; default: the queue's)")
	f.BoolVar(&o.Delete, "delete", false, "delete the messages in the same statement that receives them (at-most-once: none is returned twice)")
	pos, err := f.parse(args, stdout, "QUEUE")
	if err != nil {
		return err
	}
	if f.set("visibility-timeout") && o.VisibilityTimeoutSeconds == 0 {
		return usageErrorf("--visibility-timeout 0: give 1 to 43200 seconds, or leave it out for the queue's")
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	msgs, err := c.MQ.Receive(ctx, pos[0], o)
	if err != nil {
		return err
	}
	return messagesOut(f, stdout, pos[0], msgs)
}

// startRead parses `mq NAME QUEUE [--max-messages N] [--after SEQ]` (peek,
// receive-dlq) and returns the flags, the queue, N, the page and the
// client.
func startRead(name, what string, args []string, stdout io.Writer) (*cliFlags, string, int, client.PageOptions, *client.Client, error) {
	f := newCLIFlags("mq "+name, "QUEUE [--max-messages N] [--after SEQ]")
	max := f.Int("max-messages", 10, what+" to show at most (1-100)")
	var page client.PageOptions
	f.Int64Var(&page.After, "after", 0, "only "+what+" with a sequence above SEQ (the previous page's last, which it prints while more may follow)")
	pos, err := f.parse(args, stdout, "QUEUE")
	if err != nil {
		return nil, "", 0, page, nil, err
	}
	if *max == 0 {
		return nil, "", 0, page, nil, usageErrorf("--max-messages 0: give 1 to %d", client.MaxPeek)
	}
	if page.After < 0 {
		return nil, "", 0, page, nil, usageErrorf("--after %d: give 0 or a sequence", page.After)
	}
	c, err := f.client()
	return f, pos[0], *max, page, c, err
}

func mqPeek(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f, queue, max, page, c, err := startRead("peek", "messages", args, stdout)
	if err != nil {
		return err
	}
	p, err := c.MQ.PeekPage(ctx, queue, max, page)
	if err != nil {
		return err
	}
	return pageOut(f, stdout, queue, p, "peek", max)
}

// startSeq parses QUEUE SEQ (delete, visibility, delete-dlq) and returns
// the queue, the sequence and the client.
func startSeq(f *cliFlags, args []string, stdout io.Writer) (string, int64, *client.Client, error) {
	pos, err := f.parse(args, stdout, "QUEUE", "SEQ")
	if err != nil {
		return "", 0, nil, err
	}
	seq, err := strconv.ParseInt(pos[1], 10, 64)
	if err != nil || seq < 1 {
		return "", 0, nil, usageErrorf("sequence %q: want a positive integer", pos[1])
	}
	c, err := f.client()
	return pos[0], seq, c, err
}

// done prints the result of a verb that returns nothing: a sentence for
// people, v as JSON for scripts.
func done(f *cliFlags, w io.Writer, v any, format string, args ...any) error {
	return f.output(w, v, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, format+"\n", args...)
		return err
	})
}

func mqDelete(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("mq delete", "QUEUE SEQ [--receipt R]")
	receipt := f.String("receipt", "", "refuse the delete when the message was received again since this receipt")
	queue, seq, c, err := startSeq(f, args, stdout)
	if err != nil {
		return err
	}
	if err := c.MQ.Delete(ctx, queue, seq, *receipt); err != nil {
		return err
	}
	return done(f, stdout, map[string]any{"queue": queue, "sequence": seq, "deleted": true}, "deleted message %d of %s", seq, queue)
}

func mqVisibility(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("mq visibility", "QUEUE SEQ --seconds S [--receipt R]")
	seconds := f.Int("seconds", -1, "make the message visible again in S seconds (0-43200; 0 retries it now)")
	receipt := f.String("receipt", "", "refuse the change when the message was received again since this receipt")
	queue, seq, c, err := startSeq(f, args, stdout)
	if err != nil {
		return err
	}
	if !f.set("seconds") {
		return usageErrorf("missing --seconds S (0-%d)", client.MaxVisibilitySeconds)
	}
	if err := c.MQ.ChangeVisibility(ctx, queue, seq, *seconds, *receipt); err != nil {
		return err
	}
	return done(f, stdout, map[string]any{"queue": queue, "sequence": seq, "visible_in_seconds": *seconds},
		"message %d of %s visible again in %ds", seq, queue, *seconds)
}

// queueCount runs a verb on QUEUE that returns a count (purge, purge-dlq)
// and prints it.
func queueCount(ctx context.Context, args []string, stdout io.Writer, name, format, thing string,
	call func(s *client.MQService, ctx context.Context, queue string) (int64, error)) error {
	f := newCLIFlags("mq "+name, "QUEUE")
	pos, err := f.parse(args, stdout, "QUEUE")
	if err != nil {
		return err
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	count, err := call(c.MQ, ctx, pos[0])
	if err != nil {
		return err
	}
	return countDone(f, stdout, "purged", count, format, thing, pos[0])
}

// countDone prints a count a verb returned.
func countDone(f *cliFlags, stdout io.Writer, key string, count int64, format, thing, queue string) error {
	return done(f, stdout, map[string]int64{key: count}, format, plural(int(count), thing), queue)
}

func mqPurge(ctx context.Context, args []string, stdout, _ io.Writer) error {
	return queueCount(ctx, args, stdout, "purge", "purged %s from %s", "message", (*client.MQService).Purge)
}

func mqPurgeDLQ(ctx context.Context, args []string, stdout, _ io.Writer) error {
	return queueCount(ctx, args, stdout, "purge-dlq", "purged %s of %s", "dead letter", (*client.MQService).PurgeDLQ)
}

func mqRedrive(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("mq redrive", "QUEUE [--max-messages N | --sequences SEQ,SEQ,...]")
	max := f.Int("max-messages", 0, "move at most N dead letters, first failed first (default: all)")
	list := f.String("sequences", "", "move only the dead letters with these sequences (comma-separated, 1-1000)")
	pos, err := f.parse(args, stdout, "QUEUE")
	if err != nil {
		return err
	}
	if *max < 0 || f.set("max-messages") && *max == 0 {
		return usageErrorf("--max-messages %d: must be positive (leave it out for all)", *max)
	}
	var seqs []int64
	if f.set("sequences") {
		if f.set("max-messages") {
			return usageErrorf("give --sequences or --max-messages, not both")
		}
		if seqs, err = parseSequences(*list); err != nil {
			return err
		}
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	var n int64
	if seqs != nil {
		n, err = c.MQ.RedriveSequences(ctx, pos[0], seqs)
	} else {
		n, err = c.MQ.Redrive(ctx, pos[0], *max)
	}
	if err != nil {
		return err
	}
	return countDone(f, stdout, "redriven", n, "redrove %s back into %s", "dead letter", pos[0])
}

// parseSequences reads a comma-separated list of 1 to 1000 sequences.
func parseSequences(list string) ([]int64, error) {
	parts := strings.Split(list, ",")
	if len(parts) > client.MaxRedriveSequences {
		return nil, usageErrorf("--sequences: %d given, at most %d", len(parts), client.MaxRedriveSequences)
	}
	seqs := make([]int64, len(parts))
	for i, p := range parts {
		seq, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || seq < 1 {
			return nil, usageErrorf("--sequences: %q is not a sequence; give positive integers separated by commas", p)
		}
		seqs[i] = seq
	}
	return seqs, nil
}

func mqReceiveDLQ(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f, queue, max, page, c, err := startRead("receive-dlq", "dead letters", args, stdout)
	if err != nil {
		return err
	}
	p, err := c.MQ.ReceiveDLQPage(ctx, queue, max, page)
	if err != nil {
		return err
	}
	dead := p.Messages
	return f.output(stdout, p, func(w io.Writer) error {
		if len(dead) == 0 {
			_, err := fmt.Fprintf(w, "no dead letters in %s\n", queue)
			return err
		}
		rows := make([][]string, len(dead))
		for i, d := range dead {
			rows[i] = []string{strconv.FormatInt(d.Sequence, 10), strconv.Itoa(d.ReceiveCount), stamp(d.FailedAt),
				orDash(d.Reason), orDash(oneLine(d.LastError, 60)), string(d.Body)}
		}
		if err := table(w, "SEQ\tRECEIVES\tFAILED\tREASON\tLAST ERROR\tBODY", rows); err != nil {
			return err
		}
		return nextPage(w, "receive-dlq", queue, max, p.Next)
	})
}

func mqDeleteDLQ(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("mq delete-dlq", "QUEUE SEQ")
	queue, seq, c, err := startSeq(f, args, stdout)
	if err != nil {
		return err
	}
	if err := c.MQ.DeleteDLQ(ctx, queue, seq); err != nil {
		return err
	}
	return done(f, stdout, map[string]any{"queue": queue, "sequence": seq, "deleted": true}, "deleted dead letter %d of %s", seq, queue)
}

// plural formats a count of things: "1 message", "3 messages".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// oneLine flattens s to one line of at most n runes, for table cells.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
