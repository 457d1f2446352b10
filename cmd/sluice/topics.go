package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/client"
)

func runTopics(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "topics", []subcommand{
		{"list", "", "list the topics and their subscriptions", topicsList},
		{"create", "TOPIC", "create a topic", topicsCreate},
		{"delete", "TOPIC", "delete a topic and its subscriptions (not the queues)", topicsDelete},
		{"subscribe", "TOPIC QUEUE [--filter HEADER=VALUE ...]", "copy the topic's messages into a queue (again: replace the filter)", topicsSubscribe},
		{"unsubscribe", "TOPIC QUEUE", "stop copying the topic's messages into a queue", topicsUnsubscribe},
		{"publish", "TOPIC --body JSON | --body-file FILE [--header K=V ...] [--delay-seconds S]", "publish messages to every subscribed queue", topicsPublish},
	}, args, stdout, stderr)
}

// pairsFlag collects repeated KEY=VALUE flags into a map.
type pairsFlag map[string]string

func (p pairsFlag) String() string {
	var s []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		s = append(s, k+"="+p[k])
	}
	return strings.Join(s, ",")
}

func (p pairsFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: use NAME=VALUE", v)
	}
	p[k] = val
	return nil
}

// filterText shows a subscription filter as NAME=VALUE pairs ("-": none).
func filterText(f map[string]string) string {
	if len(f) == 0 {
		return "-"
	}
	return pairsFlag(f).String()
}

func topicsList(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("topics list", "")
	_, c, err := f.start(args, stdout)
	if err != nil {
		return err
	}
	topics, err := c.Topics.List(ctx)
	if err != nil {
		return err
	}
	return f.output(stdout, map[string][]client.Topic{"topics": topics}, func(w io.Writer) error {
		if len(topics) == 0 {
			_, err := fmt.Fprintln(w, "no topics (create one with `sluice topics create TOPIC`)")
			return err
		}
		var rows [][]string
		for _, t := range topics {
			if len(t.Subscriptions) == 0 {
				rows = append(rows, []string{t.Name, "-", "-"})
			}
			for _, s := range t.Subscriptions {
				rows = append(rows, []string{t.Name, s.Queue, filterText(s.Filter)})
			}
		}
		return table(w, "TOPIC\tQUEUE\tFILTER", rows)
	})
}

func topicsCreate(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("topics create", "TOPIC")
	pos, c, err := f.start(args, stdout, "TOPIC")
	if err != nil {
		return err
	}
	t, err := c.Topics.Create(ctx, pos[0])
	if err != nil {
		return err
	}
	return done(f, stdout, t, "created topic %s", t.Name)
}

func topicsDelete(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("topics delete", "TOPIC")
	pos, c, err := f.start(args, stdout, "TOPIC")
	if err != nil {
		return err
	}
	if err := c.Topics.Delete(ctx, pos[0]); err != nil {
		return err
	}
	return done(f, stdout, map[string]any{"name": pos[0], "deleted": true}, "deleted topic %s", pos[0])
}

func topicsSubscribe(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("topics subscribe", "TOPIC QUEUE [--filter HEADER=VALUE ...]")
	filter := pairsFlag{}
	f.Var(filter, "filter", "copy only messages whose header HEADER is exactly VALUE (repeat: all must match)")
	pos, c, err := f.start(args, stdout, "TOPIC", "QUEUE")
	if err != nil {
		return err
	}
	t, err := c.Topics.Subscribe(ctx, pos[0], pos[1], client.SubscribeOptions{Filter: filter})
	if err != nil {
		return err
	}
	return done(f, stdout, t, "subscribed queue %s to topic %s (filter %s)", pos[1], pos[0], filterText(filter))
}

func topicsUnsubscribe(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("topics unsubscribe", "TOPIC QUEUE")
	pos, c, err := f.start(args, stdout, "TOPIC", "QUEUE")
	if err != nil {
		return err
	}
	if err := c.Topics.Unsubscribe(ctx, pos[0], pos[1]); err != nil {
		return err
	}
	return done(f, stdout, map[string]any{"topic": pos[0], "queue": pos[1], "subscribed": false},
		"unsubscribed queue %s from topic %s", pos[1], pos[0])
}

func topicsPublish(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("topics publish", "TOPIC --body JSON | --body-file FILE [--header K=V ...] [--delay-seconds S]")
	body := f.String("body", "", "message body as JSON, or relaxed {key:value}; a JSON array publishes each element as a message (1-10; wrap one array body as [[...]])")
	file := f.String("body-file", "", "read the body from FILE (strict JSON; - for stdin)")
	delay := f.Int("delay-seconds", 0, "keep the copies invisible that long (0-43200)")
	headers := pairsFlag{}
	f.Var(headers, "header", "header NAME=VALUE of every message published (repeat); subscription filters match headers")
	pos, err := f.parse(args, stdout, "TOPIC")
	if err != nil {
		return err
	}
	b, err := readBody(*body, *file, f.set("body"))
	if err != nil {
		return err
	}
	items := []json.RawMessage{b}
	if b[0] == '[' {
		if err := json.Unmarshal(b, &items); err != nil {
			return err
		}
		if len(items) < 1 || len(items) > client.MaxBatch {
			return usageErrorf("a JSON array publishes a batch of 1 to %d messages, got %d (to publish one message whose body is an array, wrap it: [[...]])", client.MaxBatch, len(items))
		}
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	topic := pos[0]
	var h json.RawMessage
	if len(headers) > 0 {
		if h, err = json.Marshal(map[string]string(headers)); err != nil {
			return err
		}
	}
	entries := make([]client.PublishEntry, len(items))
	for i, it := range items {
		entries[i] = client.PublishEntry{Body: it, Headers: h, DelaySeconds: *delay}
	}
	copies, err := c.Topics.PublishEntries(ctx, topic, entries)
	if err != nil {
		return err
	}
	return f.output(stdout, map[string][]int{"copies": copies}, func(w io.Writer) error {
		s := make([]string, len(copies))
		for i, n := range copies {
			s[i] = strconv.Itoa(n)
		}
		_, err := fmt.Fprintf(w, "published %s to %s: copies %s\n", plural(len(copies), "message"), topic, strings.Join(s, " "))
		return err
	})
}
