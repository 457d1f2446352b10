package functions

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/pgqueue"
)

// SetApp records that app (the `app:` of a manifest) owns the function, or
// with app "" that no app does (it was deployed by hand). Deploys change
// only their own app's functions. It fails with ErrNotFound when there is
// no such function.
func (r *Registry) SetApp(ctx context.Context, account, name, app string) error {
	if !pgqueue.ValidApp(app) {
		return fmt.Errorf("functions: %w: app name %q: use 1-80 characters from A-Z a-z 0-9 _ -", ErrInvalidName, app)
	}
	tag, err := r.pool.Exec(ctx, r.q.Get("set_function_app"), account, name, app)
	if err == nil && tag.RowsAffected() == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("functions: set app of %s (account %s): %w", name, account, err)
	}
	return nil
}

// Apps returns the app owning each function of account, by function name;
// a function no app owns maps to "".
func (r *Registry) Apps(ctx context.Context, account string) (map[string]string, error) {
	rows, err := r.pool.Query(ctx, r.q.Get("function_apps"), account)
	if err != nil {
		return nil, fmt.Errorf("functions: list apps (account %s): %w", account, err)
	}
	out := map[string]string{}
	var name, app string
	if _, err := pgx.ForEachRow(rows, []any{&name, &app}, func() error { out[name] = app; return nil }); err != nil {
		return nil, fmt.Errorf("functions: list apps (account %s): %w", account, err)
	}
	return out, nil
}
