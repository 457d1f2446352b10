package triggers

import (
	"context"

	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/namedsql"
	"github.com/sluicehq/sluice/pgqueue"
)

// WithDefaults returns t with the defaults Put fills in (alias live, batch
// size, concurrency, ack policy, backoff, time zone UTC, source api), so
// that a trigger as declared compares equal to the one stored.
func (t Trigger) WithDefaults() Trigger {
	t.applyDefaults()
	return t
}

// SetApp records that app (the `app:` of a manifest) owns the trigger, or
// with app "" that no app does. Deploys change only their own app's
// triggers. It fails with ErrNotFound when there is no such trigger.
func (s *Store) SetApp(ctx context.Context, account, name, app string) error {
	return setApp(ctx, s.pool, s.q, "set_trigger_app", "trigger", account, name, app, ErrNotFound)
}

// Apps returns the app owning each trigger of account, by trigger name; a
// trigger no app owns maps to "".
func (s *Store) Apps(ctx context.Context, account string) (map[string]string, error) {
	return listApps(ctx, s.pool, s.q, "trigger_apps", "trigger", account)
}

// SetApp records that app owns the hook, or with app "" that no app does.
// It fails with ErrHookNotFound when there is no such hook.
func (s *HookStore) SetApp(ctx context.Context, account, name, app string) error {
	return setApp(ctx, s.pool, s.q, "set_hook_app", "hook", account, name, app, ErrHookNotFound)
}

// Apps returns the app owning each hook of account, by hook name; a hook
// no app owns maps to "".
func (s *HookStore) Apps(ctx context.Context, account string) (map[string]string, error) {
	return listApps(ctx, s.pool, s.q, "hook_apps", "hook", account)
}

func setApp(ctx context.Context, pool *pgxpool.Pool, q namedsql.Statements, stmt, kind, account, name, app string, notFound error) error {
	if !pgqueue.ValidApp(app) {
		return fmt.Errorf("triggers: set app of %s %s: invalid app name %q: use 1-80 characters from A-Z a-z 0-9 _ -", kind, name, app)
	}
	tag, err := pool.Exec(ctx, q.Get(stmt), account, name, app)
	if err == nil && tag.RowsAffected() == 0 {
		err = notFound
	}
	if err != nil {
		return fmt.Errorf("triggers: set app of %s %s (account %s): %w", kind, name, account, err)
	}
	return nil
}

func listApps(ctx context.Context, pool *pgxpool.Pool, q namedsql.Statements, stmt, kind, account string) (map[string]string, error) {
	rows, err := pool.Query(ctx, q.Get(stmt), account)
	if err != nil {
		return nil, fmt.Errorf("triggers: list %s apps (account %s): %w", kind, account, err)
	}
	out := map[string]string{}
	var name, app string
	if _, err := pgx.ForEachRow(rows, []any{&name, &app}, func() error { out[name] = app; return nil }); err != nil {
		return nil, fmt.Errorf("triggers: list %s apps (account %s): %w", kind, account, err)
	}
	return out, nil
}
