package pgqueue

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// ValidApp reports whether app is a valid app name: 1-80 characters from
// A-Z a-z 0-9 _ -, or "" for no app.
func ValidApp(app string) bool { return app == "" || ValidName(app) }

// SetQueueApp records that app (the `app:` of a manifest) owns the queue,
// or with app "" that no app does (the queue was made by hand). Deploys
// change only their own app's queues. It fails with ErrQueueNotFound when
// there is no such queue.
func (c *Client) SetQueueApp(ctx context.Context, account, name, app string) error {
	if !ValidApp(app) {
		return newError(ErrInvalidName, "invalid app name %s: use 1-80 characters from A-Z a-z 0-9 _ -", quote(app))
	}
	tag, err := c.pool.Exec(ctx, c.q.get("set_queue_app"), account, name, app)
	if err != nil {
		return convertError("set app of queue "+quote(name), err)
	}
	if tag.RowsAffected() == 0 {
		return newError(ErrQueueNotFound, "queue %s not found in account %s", quote(name), account)
	}
	return nil
}

// QueueApps returns the app owning each queue of account, by queue name;
// a queue no app owns maps to "".
func (c *Client) QueueApps(ctx context.Context, account string) (map[string]string, error) {
	rows, err := c.pool.Query(ctx, c.q.get("queue_apps"), account)
	if err != nil {
		return nil, convertError("list queue apps of account "+account, err)
	}
	out := map[string]string{}
	var name, app string
	_, err = pgx.ForEachRow(rows, []any{&name, &app}, func() error { out[name] = app; return nil })
	return out, convertError("list queue apps of account "+account, err)
}

// MessageCount is what deleting a queue would lose: every message in it
// (ready, delayed and in flight) and its dead letters. It fails with
// ErrQueueNotFound when there is no such queue.
func (c *Client) MessageCount(ctx context.Context, account, name string) (int64, error) {
	s, err := c.Stats(ctx, account, name)
	return s.Total + s.DLQ, err
}
