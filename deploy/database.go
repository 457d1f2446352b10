package deploy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/pgqueue/migrate"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/server/migrations"
	"github.com/sluicehq/sluice/triggers"
)

// DBConfig configures OpenDB.
type DBConfig struct {
	// URL is the Postgres URL (DATABASE_URL).
	URL string
	// Schema is the database schema; empty means pgqueue.DefaultSchema.
	Schema string
	// Migrate applies every pending migration (migrations.All) first.
	Migrate bool
	// CacheDir keeps compiled modules (the server's default: the user
	// cache folder's sluice/compiled), so the server that runs a deployed
	// function finds it compiled. Empty means that default.
	CacheDir string
	// Logger receives the runtime's events; the zero Logger discards them.
	Logger zerolog.Logger
}

// DB is a database to apply manifests to directly, without a server: the
// queue, function, trigger and hook stores on one connection pool, and a
// WebAssembly runtime that checks each module compiles before it is
// stored, as the server's deploy route does. Close it when done.
type DB struct {
	pool     *pgxpool.Pool
	runtime  *runtime.Runtime
	stores   Stores
	registry *functions.Registry
}

// OpenDB connects to cfg.URL, migrates it when asked, and returns the DB.
func OpenDB(ctx context.Context, cfg DBConfig) (*DB, error) {
	if cfg.URL == "" {
		return nil, errors.New("deploy: no database URL: set DATABASE_URL")
	}
	if cfg.Schema == "" {
		cfg.Schema = pgqueue.DefaultSchema
	}
	if err := migrate.ValidateSchema(cfg.Schema); err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	if cfg.CacheDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		cfg.CacheDir = filepath.Join(dir, "sluice", "compiled")
	}
	pcfg, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("deploy: database URL: %w", err)
	}
	pcfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("deploy: connect: %w", err)
	}
	d := &DB{pool: pool}
	if err := d.open(ctx, cfg); err != nil {
		d.Close(context.Background())
		return nil, err
	}
	return d, nil
}

func (d *DB) open(ctx context.Context, cfg DBConfig) error {
	if err := d.pool.Ping(ctx); err != nil {
		return fmt.Errorf("deploy: connect: %w", err)
	}
	if cfg.Migrate {
		if err := migrate.Up(ctx, d.pool, cfg.Schema, migrations.All...); err != nil {
			return err
		}
	}
	queue, err := pgqueue.New(d.pool, pgqueue.Options{Schema: cfg.Schema})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.CacheDir, 0o755); err != nil {
		return fmt.Errorf("deploy: wasm cache folder: %w", err)
	}
	if d.runtime, err = runtime.New(ctx, runtime.Config{CompilationCacheDir: cfg.CacheDir, Logger: cfg.Logger}); err != nil {
		return err
	}
	registry, err := functions.NewRegistry(d.pool, cfg.Schema, d.validateModule)
	if err != nil {
		return err
	}
	trs, err := triggers.NewStore(d.pool, cfg.Schema)
	if err != nil {
		return err
	}
	hooks, err := triggers.NewHookStore(queue)
	if err != nil {
		return err
	}
	d.stores = Stores{Queue: queue, Registry: registry, Triggers: trs, Hooks: dbHooks{queue: queue, hooks: hooks}}
	return nil
}

// validateModule is the registry's deploy-time check, the server's
// (runtime.Check).
func (d *DB) validateModule(ctx context.Context, module []byte, cfg functions.Config) error {
	return d.runtime.Check(ctx, module, cfg.MemoryMiB)
}

// Target returns the Target that applies to account on this database.
func (d *DB) Target(account string) Target { return DBTarget(account, d.stores) }

// Close closes the runtime and the connection pool.
func (d *DB) Close(ctx context.Context) error {
	var err error
	if d.runtime != nil {
		err = d.runtime.Close(ctx)
	}
	d.pool.Close()
	return err
}

// dbHooks is triggers.HookStore as a HookStore, checking each hook as the
// server's hook API does: triggers.Hook.Check, then that the queue exists.
type dbHooks struct {
	queue *pgqueue.Client
	hooks *triggers.HookStore
}

func (h dbHooks) PutHook(ctx context.Context, account string, hk Hook) (bool, error) {
	th := triggers.Hook{Account: account, Name: hk.Name, Queue: hk.Queue, Verify: hk.Verify, Secrets: hk.Secrets, Source: hk.Source}
	if err := th.Check(); err != nil {
		return false, err
	}
	if _, err := h.queue.GetQueue(ctx, account, hk.Queue); err != nil {
		return false, err
	}
	return h.hooks.Put(ctx, th)
}

func (h dbHooks) ListHooks(ctx context.Context, account string) ([]HookInfo, error) {
	hs, err := h.hooks.List(ctx, account)
	if err != nil {
		return nil, err
	}
	out := make([]HookInfo, 0, len(hs))
	for _, hk := range hs {
		out = append(out, HookInfo{Name: hk.Name, Queue: hk.Queue, Verify: hk.Verify, SecretCount: hk.SecretCount,
			Source: hk.Source, CreatedAt: hk.CreatedAt.UTC(), UpdatedAt: hk.UpdatedAt.UTC()})
	}
	return out, nil
}

func (h dbHooks) DeleteHook(ctx context.Context, account, name string) error {
	return h.hooks.Delete(ctx, account, name)
}

func (h dbHooks) SetHookApp(ctx context.Context, account, name, app string) error {
	return h.hooks.SetApp(ctx, account, name, app)
}

func (h dbHooks) HookApps(ctx context.Context, account string) (map[string]string, error) {
	return h.hooks.Apps(ctx, account)
}
