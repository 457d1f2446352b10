package pgqueue

import (
	"context"
	"encoding/json"

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
// (both in account). Subscribing twice is a no-op.
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
	var n int32
	err := tx.QueryRow(ctx, c.q.get("publish"), account, topic, string(body), rawOrNil(headers)).Scan(&n)
	return int(n), convertError("publish to topic "+quote(topic), err)
}
