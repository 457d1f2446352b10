package functions

import (
	"context"
	"encoding/hex"
	"errors"
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

// PlanDeploy tells what Deploy of a module with SHA-256 sha256Hex and cfg
// would do, changing nothing: the version alias (DefaultAlias when "")
// would point at (the latest when module and config equal its, else the
// next), whether that version would be created, and whether the alias
// would move. The module itself is not checked (Deploy compiles it).
func (r *Registry) PlanDeploy(ctx context.Context, account, name, sha256Hex string, cfg Config, alias string) (Deployment, error) {
	alias, err := checkDeploy(name, alias, cfg)
	if err != nil {
		return Deployment{}, err
	}
	sum, err := hex.DecodeString(sha256Hex)
	if err != nil || len(sum) != 32 {
		return Deployment{}, fmt.Errorf("functions: plan deploy %s: %w: module sha256 %q is not 64 hex digits", name, ErrInvalidModule, sha256Hex)
	}
	env := cfg.Env
	if env == nil {
		env = map[string]string{}
	}
	d := Deployment{Version: Version{Function: name, SHA256: hex.EncodeToString(sum), Config: cfg}}
	d.Version.Config.Env = env
	var id int64
	err = r.pool.QueryRow(ctx, r.q.Get("function_id"), account, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		d.Version.Number, d.Created, d.AliasMoved = 1, true, true
		return d, nil
	}
	if err != nil {
		return Deployment{}, fmt.Errorf("functions: plan deploy %s (account %s): %w", name, account, err)
	}
	latest, err := r.latestVersion(ctx, r.pool, id)
	if err != nil {
		return Deployment{}, fmt.Errorf("functions: plan deploy %s (account %s): %w", name, account, err)
	}
	if latest.same(sum, cfg, env) {
		d.Version.Number = latest.number
	} else {
		d.Version.Number, d.Created = latest.number+1, true
	}
	var current int
	var previous *int
	err = r.pool.QueryRow(ctx, r.q.Get("alias_target"), id, alias).Scan(&current, &previous)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		d.AliasMoved = true
	case err != nil:
		return Deployment{}, fmt.Errorf("functions: plan deploy %s (account %s): %w", name, account, err)
	default:
		d.AliasMoved = current != d.Version.Number
	}
	return d, nil
}
