package pgqueue

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// CreateTopic creates a topic; ErrTopicExists if it exists.
func (c *Client) CreateTopic(ctx context.Context, account, name string) error {
	_, err := c.pool.Exec(ctx, c.q.get("create_topic"), account, name)
	return convertError("create topic "+quote(name), err)
}

// DeleteTopic deletes a topic and its subscriptions (not the queues);
// ErrTopicNotFound if there is no such topic.
func (c *Client) DeleteTopic(ctx context.Context, account, name string) error {
	var ok bool
	if err := c.pool.QueryRow(ctx, c.q.get("delete_topic"), account, name).Scan(&ok); err != nil {
		return convertError("delete topic "+quote(name), err)
	}
	if !ok {
		return newError(ErrTopicNotFound, "topic %s not found in account %s", quote(name), account)
	}
	return nil
}

// Subscribe makes queue receive a copy of every message published to topic
// (both in account), without a filter, as SourceAPI. Subscribing again
// removes a filter the subscription had (see SubscribeWith).
func (c *Client) Subscribe(ctx context.Context, account, topic, queue string) error {
	_, err := c.pool.Exec(ctx, c.q.get("subscribe"), account, topic, queue)
	return convertError("subscribe queue "+quote(queue)+" to topic "+quote(topic), err)
}

// Unsubscribe stops copying topic's messages into queue.
func (c *Client) Unsubscribe(ctx context.Context, account, topic, queue string) error {
	_, err := c.pool.Exec(ctx, c.q.get("unsubscribe"), account, topic, queue)
	return convertError("unsubscribe queue "+quote(queue)+" from topic "+quote(topic), err)
}

// Subscriptions lists the queues subscribed to a topic, by name.
func (c *Client) Subscriptions(ctx context.Context, account, topic string) ([]string, error) {
	rows, err := c.pool.Query(ctx, c.q.get("list_subscriptions"), account, topic)
	if err != nil {
		return nil, convertError("list subscriptions of topic "+quote(topic), err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return names, convertError("list subscriptions of topic "+quote(topic), err)
}

// Publish copies a message into every queue subscribed to topic, in one
// transaction, and returns how many copies it made.
func (c *Client) Publish(ctx context.Context, account, topic string, body, headers json.RawMessage) (int, error) {
	return c.PublishTx(ctx, c.pool, account, topic, body, headers)
}

// PublishTx is Publish inside the caller's transaction.
func (c *Client) PublishTx(ctx context.Context, tx DB, account, topic string, body, headers json.RawMessage) (int, error) {
	if len(body) == 0 {
		return 0, newError(ErrInvalidArgument, "publish to topic %s: empty body: use a JSON value", quote(topic))
	}
	if err := c.checkStoredBytes(ctx, tx, account, "publish to topic", topic); err != nil {
		return 0, err
	}
	var n int32
	err := tx.QueryRow(ctx, c.q.get("publish"), account, topic, string(body), rawOrNil(headers)).Scan(&n)
	return int(n), convertError("publish to topic "+quote(topic), err)
}

// MaxFilterKeys is how many header names a subscription filter may name.
const MaxFilterKeys = 10

// Topic is a topic with its subscriptions, by queue name.
type Topic struct {
	Name          string
	CreatedAt     time.Time
	Subscriptions []TopicSubscription
}

// TopicSubscription is a queue subscribed to a topic. A nil Filter takes every
// message; otherwise a message is copied into Queue only when its headers
// hold every key of Filter with exactly that string value.
type TopicSubscription struct {
	Queue  string
	Filter map[string]string
	// Source says who made it: SourceAPI or SourceManifest.
	Source string
}

// Who made a subscription (TopicSubscription.Source): anyone, or
// `sluice deploy`, which removes the ones it made that left the manifest.
const (
	SourceAPI      = "api"
	SourceManifest = "manifest"
)

// SubscribeOptions tune SubscribeWith.
type SubscribeOptions struct {
	// Filter copies only messages whose headers hold every key with
	// exactly that string value (1 to MaxFilterKeys keys; nil: all).
	Filter map[string]string
	// Source is SourceAPI ("" means it) or SourceManifest.
	Source string
}

// SubscribeWith subscribes queue to topic with options, replacing the
// filter and source of an existing subscription.
func (c *Client) SubscribeWith(ctx context.Context, account, topic, queue string, o SubscribeOptions) error {
	op := "subscribe queue " + quote(queue) + " to topic " + quote(topic)
	filter, source := o.Filter, o.Source
	if source == "" {
		source = SourceAPI
	}
	var f any
	if len(filter) > 0 {
		if len(filter) > MaxFilterKeys {
			return newError(ErrInvalidArgument, "%s: a filter names at most %d headers, got %d", op, MaxFilterKeys, len(filter))
		}
		b, err := json.Marshal(filter)
		if err != nil {
			return newError(ErrInvalidArgument, "%s: filter: %v", op, err)
		}
		f = string(b)
	}
	_, err := c.pool.Exec(ctx, c.q.get("subscribe_filter"), account, topic, queue, f, source)
	return convertError(op, err)
}

// ListTopics returns the account's topics by name, each with its
// subscriptions by queue name.
func (c *Client) ListTopics(ctx context.Context, account string) ([]Topic, error) {
	return c.topics(ctx, "list topics of account "+account, c.q.get("list_topics"), account)
}

// GetTopic returns one topic with its subscriptions; ErrTopicNotFound if
// there is no such topic.
func (c *Client) GetTopic(ctx context.Context, account, name string) (Topic, error) {
	ts, err := c.topics(ctx, "get topic "+quote(name), c.q.get("get_topic"), account, name)
	if err != nil {
		return Topic{}, err
	}
	if len(ts) == 0 {
		return Topic{}, newError(ErrTopicNotFound, "topic %s not found in account %s", quote(name), account)
	}
	return ts[0], nil
}

func (c *Client) topics(ctx context.Context, op, query string, args ...any) ([]Topic, error) {
	rows, err := c.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, convertError(op, err)
	}
	defer rows.Close()
	var out []Topic
	for rows.Next() {
		var (
			name   string
			at     time.Time
			queue  *string
			filter map[string]string
			source *string
		)
		if err := rows.Scan(&name, &at, &queue, &filter, &source); err != nil {
			return nil, convertError(op, err)
		}
		if len(out) == 0 || out[len(out)-1].Name != name {
			out = append(out, Topic{Name: name, CreatedAt: at, Subscriptions: []TopicSubscription{}})
		}
		if queue != nil {
			t := &out[len(out)-1]
			t.Subscriptions = append(t.Subscriptions, TopicSubscription{Queue: *queue, Filter: filter, Source: *source})
		}
	}
	return out, convertError(op, rows.Err())
}

// Publication is one message to publish to a topic.
type Publication struct {
	Body    json.RawMessage
	Headers json.RawMessage // a JSON object or nil; subscription filters match it
	// Delay keeps every copy invisible that long (whole seconds, up to 12
	// hours), or for its queue's delay_seconds when that is longer.
	Delay time.Duration
}

// PublishBatch publishes messages to topic in one transaction, each
// copied into every queue whose subscription filter its headers match.
// It returns the copies made per message, in order.
func (c *Client) PublishBatch(ctx context.Context, account, topic string, ms []Publication) ([]int, error) {
	return c.PublishBatchTx(ctx, c.pool, account, topic, ms)
}

// PublishBatchTx is PublishBatch inside the caller's transaction.
func (c *Client) PublishBatchTx(ctx context.Context, tx DB, account, topic string, ms []Publication) ([]int, error) {
	op := "publish to topic " + quote(topic)
	if len(ms) == 0 {
		return nil, newError(ErrInvalidArgument, "%s: no messages: publish 1 or more", op)
	}
	bodies := make([]string, len(ms))
	headers := make([]*string, len(ms))
	delays := make([]int32, len(ms))
	for i, m := range ms {
		delays[i] = int32(m.Delay / time.Second)
		if len(m.Body) == 0 {
			return nil, newError(ErrInvalidArgument, "%s: message %d: empty body: use a JSON value", op, i)
		}
		bodies[i] = string(m.Body)
		if len(m.Headers) > 0 {
			h := string(m.Headers)
			headers[i] = &h
		}
	}
	if err := c.checkStoredBytes(ctx, tx, account, "publish to topic", topic); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, c.q.get("publish_batch"), account, topic, bodies, headers, delays)
	if err != nil {
		return nil, convertError(op, err)
	}
	n, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, convertError(op, err)
	}
	out := make([]int, len(n))
	for i, v := range n {
		out[i] = int(v)
	}
	return out, nil
}
