package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/sluicehq/sluice/wire"
)

// TopicsService manages the topics of the client's account and publishes
// to them (scope mq:admin to change topics and subscriptions, mq:receive
// to read them, mq:send to publish).
type TopicsService struct{ c *Client }

// Topic is a topic with the queues subscribed to it.
type Topic = wire.Topic

// Subscription is a queue subscribed to a topic, with its filter on
// headers (nil: every message).
type Subscription = wire.Subscription

// PublishEntry is one message of PublishEntries: its body, headers (which
// subscription filters match) and delay.
type PublishEntry = wire.PublishEntry

// MaxFilterKeys is how many headers a subscription filter may name.
const MaxFilterKeys = 10

// List returns the account's topics by name, with their subscriptions.
func (s *TopicsService) List(ctx context.Context) ([]Topic, error) {
	return listOf[Topic](ctx, s.c, request{method: http.MethodGet, path: s.c.managePath("topics")}, "topics")
}

// Get returns topic name with its subscriptions.
func (s *TopicsService) Get(ctx context.Context, name string) (Topic, error) {
	var out Topic
	if err := checkName("topic", name); err != nil {
		return out, err
	}
	err := s.c.do(ctx, request{method: http.MethodGet, path: s.c.managePath("topics", name)}, &out)
	return out, err
}

// Create creates topic name (a conflict, CodeTopicExists, when it exists).
func (s *TopicsService) Create(ctx context.Context, name string) (Topic, error) {
	var out Topic
	if err := checkName("topic", name); err != nil {
		return out, err
	}
	err := s.c.do(ctx, request{method: http.MethodPost, path: s.c.managePath("topics"), body: wire.CreateTopicRequest{Name: name}}, &out)
	return out, err
}

// Delete deletes topic name and its subscriptions (not the queues).
func (s *TopicsService) Delete(ctx context.Context, name string) error {
	if err := checkName("topic", name); err != nil {
		return err
	}
	return s.c.do(ctx, request{method: http.MethodDelete, path: s.c.managePath("topics", name)}, nil)
}

// SubscribeOptions tune Subscribe.
type SubscribeOptions struct {
	// Filter copies only messages whose headers hold every key with
	// exactly that string value (up to MaxFilterKeys keys; nil: all).
	Filter map[string]string
	// Source is "api" ("" means it) or "manifest": owned by sluice
	// deploy, which removes it when it leaves the manifest.
	Source string
}

// Subscribe makes queue receive a copy of the messages published to
// topic (those its filter matches). Subscribing again replaces the filter
// and source. It returns the topic as it now is.
func (s *TopicsService) Subscribe(ctx context.Context, topic, queue string, opts ...SubscribeOptions) (Topic, error) {
	var out Topic
	if err := checkName("topic", topic); err != nil {
		return out, err
	}
	if err := checkName("queue", queue); err != nil {
		return out, err
	}
	o := lastOf(opts)
	if len(o.Filter) > MaxFilterKeys {
		return out, invalidf("filter: name at most %d headers, got %d", MaxFilterKeys, len(o.Filter))
	}
	err := s.c.do(ctx, request{method: http.MethodPut, path: s.c.managePath("topics", topic, "subscriptions", queue),
		body: wire.SubscribeRequest{Filter: o.Filter, Source: o.Source}}, &out)
	return out, err
}

// Unsubscribe stops copying topic's messages into queue.
func (s *TopicsService) Unsubscribe(ctx context.Context, topic, queue string) error {
	if err := checkName("topic", topic); err != nil {
		return err
	}
	if err := checkName("queue", queue); err != nil {
		return err
	}
	return s.c.do(ctx, request{method: http.MethodDelete, path: s.c.managePath("topics", topic, "subscriptions", queue)}, nil)
}

// PublishOptions tune a publish.
type PublishOptions struct {
	// DelaySeconds keeps the copies invisible that long (0 to 43200), or
	// for their queue's delay when that is longer.
	DelaySeconds int
}

func (o PublishOptions) query() (url.Values, error) {
	return sendQuery(SendOptions{DelaySeconds: o.DelaySeconds})
}

// Publish publishes one message to topic and returns the copies made (one
// per subscribed queue whose filter matched). body is encoded as for
// MQService.Send.
func (s *TopicsService) Publish(ctx context.Context, topic string, body any, opts ...PublishOptions) (int, error) {
	if err := checkName("topic", topic); err != nil {
		return 0, err
	}
	b, err := encodeBody(body)
	if err != nil {
		return 0, err
	}
	q, err := lastOf(opts).query()
	if err != nil {
		return 0, err
	}
	if b[0] != '{' {
		n, err := s.publishBatch(ctx, topic, []json.RawMessage{b}, q)
		if err != nil {
			return 0, err
		}
		if len(n) != 1 {
			return 0, fmt.Errorf("client: publish to topic %s: got %d counts for one message", topic, len(n))
		}
		return n[0], nil
	}
	var out wire.PublishResult
	err = s.c.do(ctx, request{method: http.MethodPost, path: []string{s.c.account, "topics", topic, "messages"}, query: q, raw: b, contentType: "application/json"}, &out)
	return out.Copies, err
}

// PublishBatch publishes 1 to 10 messages to topic in one transaction and
// returns the copies made per message, in order.
func (s *TopicsService) PublishBatch(ctx context.Context, topic string, bodies []any, opts ...PublishOptions) ([]int, error) {
	if err := checkName("topic", topic); err != nil {
		return nil, err
	}
	if len(bodies) < 1 || len(bodies) > MaxBatch {
		return nil, invalidf("batch of %d messages: publish 1 to %d", len(bodies), MaxBatch)
	}
	q, err := lastOf(opts).query()
	if err != nil {
		return nil, err
	}
	raws, err := encodeBodies(bodies)
	if err != nil {
		return nil, err
	}
	return s.publishBatch(ctx, topic, raws, q)
}

func (s *TopicsService) publishBatch(ctx context.Context, topic string, bodies []json.RawMessage, q url.Values) ([]int, error) {
	var out wire.PublishBatchResult
	err := s.c.do(ctx, request{method: http.MethodPost, path: []string{s.c.account, "topics", topic, "messages"}, query: q, body: bodies}, &out)
	return out.Copies, err
}

// PublishEntries publishes 1 to 10 entries, each with its own headers and
// delay, in one transaction, and returns the copies made per entry.
func (s *TopicsService) PublishEntries(ctx context.Context, topic string, entries []PublishEntry) ([]int, error) {
	if err := checkName("topic", topic); err != nil {
		return nil, err
	}
	if len(entries) < 1 || len(entries) > MaxBatch {
		return nil, invalidf("%d entries: publish 1 to %d", len(entries), MaxBatch)
	}
	for i, e := range entries {
		if err := checkRange(fmt.Sprintf("entries[%d].delay_seconds", i), e.DelaySeconds, 0, MaxDelaySeconds); err != nil {
			return nil, err
		}
	}
	var out wire.PublishBatchResult
	err := s.c.do(ctx, request{method: http.MethodPost, path: []string{s.c.account, "topics", topic, "messages", "entries"},
		body: wire.PublishEntriesRequest{Entries: entries}}, &out)
	return out.Copies, err
}
