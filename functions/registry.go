package functions

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/namedsql"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/pgqueue/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations is the function registry's migration line. Apply it after the
// queue core's (pgqueue.Migrations): its tables reference accounts.
var Migrations = migrate.NewLine("functions", migrationFiles, "migrations")

//go:embed queries.sql
var queriesSQL string

// DefaultAlias is the alias a deploy moves and triggers follow by default.
const DefaultAlias = "live"

// Errors callers branch on with errors.Is.
var (
	ErrNotFound      = errors.New("not found")
	ErrInvalidName   = errors.New("invalid name")
	ErrInvalidConfig = errors.New("invalid config")
	ErrInvalidModule = errors.New("invalid module")
	ErrNoRollback    = errors.New("nothing to roll back to")
	ErrLimit         = errors.New("limit exceeded")
)

// Config is what a version runs with besides its module.
type Config struct {
	MemoryMiB int               `json:"memory_mb"`
	Timeout   time.Duration     `json:"timeout"`
	Env       map[string]string `json:"env,omitempty"`
	// Capabilities is what the function may do beyond reporting failures
	// (Function ABI v1.1); the zero value denies everything.
	Capabilities Capabilities `json:"capabilities"`
}

// Capabilities is what a function version may do beyond reporting which
// messages failed (Function ABI v1.1). Each list is denied by default.
type Capabilities struct {
	// Emits are the patterns ("orders-*", "audit") of the queues and
	// topics the function may emit messages to.
	Emits []string `json:"emits,omitempty"`
	// AllowedOutboundHosts are the URLs the function may call over HTTP,
	// such as "https://api.example.com" or "http://127.0.0.1:*".
	AllowedOutboundHosts []string `json:"allowed_outbound_hosts,omitempty"`
	// Stores are the account's key-value stores the function may open.
	Stores []string `json:"stores,omitempty"`
}

// Equal reports whether c and o allow the same things, in the same order.
func (c Capabilities) Equal(o Capabilities) bool {
	return slices.Equal(c.Emits, o.Emits) && slices.Equal(c.AllowedOutboundHosts, o.AllowedOutboundHosts) &&
		slices.Equal(c.Stores, o.Stores)
}

// Version is one immutable version of a function.
type Version struct {
	Function  string
	Number    int
	SHA256    string // hex of the module's SHA-256
	SizeBytes int
	Config
	CreatedAt time.Time
}

// Function is a function with where its aliases point.
type Function struct {
	Name          string
	LatestVersion int
	Aliases       map[string]int
	// RollbackTo holds, for each alias that has moved, the version
	// Rollback would move it back to.
	RollbackTo map[string]int
	CreatedAt  time.Time
}

// Deployment tells what a Deploy changed.
type Deployment struct {
	Version Version
	// Created is false when the module and config equal the latest
	// version's, which is then reused.
	Created bool
	// AliasMoved is true when the alias pointed elsewhere (or nowhere).
	AliasMoved bool
}

// ValidateFunc checks a module before it is stored (the runtime loads it
// with the limits of cfg, so what it compiles is what the triggers will
// run); its error is returned to the deployer wrapped in ErrInvalidModule.
type ValidateFunc func(ctx context.Context, module []byte, cfg Config) error

// Registry stores functions in Postgres. It is safe for concurrent use.
type Registry struct {
	pool     *pgxpool.Pool
	validate ValidateFunc
	q        namedsql.Statements
}

// NewRegistry returns a registry over the migrated schema. validate may be
// nil (no check beyond the WASM magic number).
func NewRegistry(pool *pgxpool.Pool, schema string, validate ValidateFunc) (*Registry, error) {
	if err := migrate.ValidateSchema(schema); err != nil {
		return nil, fmt.Errorf("functions: new registry: %w", err)
	}
	return &Registry{pool: pool, validate: validate, q: namedsql.MustParse(queriesSQL, schema)}, nil
}

func checkName(kind, name string) error {
	if !pgqueue.ValidName(name) {
		return fmt.Errorf("functions: %w: %s name %q: use 1-80 characters from A-Z a-z 0-9 _ -", ErrInvalidName, kind, name)
	}
	return nil
}

func (c Config) check() error {
	if c.MemoryMiB < MinMemoryMiB || c.MemoryMiB > MaxMemoryMiB {
		return fmt.Errorf("functions: %w: memory %d MiB is out of range %d-%d", ErrInvalidConfig, c.MemoryMiB, MinMemoryMiB, MaxMemoryMiB)
	}
	if c.Timeout < time.Millisecond || c.Timeout > MaxTimeout {
		return fmt.Errorf("functions: %w: timeout %s is out of range 1ms-%s", ErrInvalidConfig, c.Timeout, MaxTimeout)
	}
	env, _ := json.Marshal(c.Env) // strings only: cannot fail
	caps, _ := json.Marshal(c.Capabilities)
	if n := len(env) + len(caps); n > MaxConfigBytes {
		return fmt.Errorf("functions: %w: env and capabilities take %d bytes as JSON; at most %d are kept for a version", ErrInvalidConfig, n, MaxConfigBytes)
	}
	return nil
}

var wasmMagic = []byte{0x00, 'a', 's', 'm'}

// checkDeploy checks a deploy's function name, alias and config, and
// returns the alias (DefaultAlias when "").
func checkDeploy(name, alias string, cfg Config) (string, error) {
	if alias == "" {
		alias = DefaultAlias
	}
	for _, n := range [][2]string{{"function", name}, {"alias", alias}} {
		if err := checkName(n[0], n[1]); err != nil {
			return "", err
		}
	}
	return alias, cfg.check()
}

// latestRow is a function's latest version as far as a deploy compares it
// (number 0: the function has none).
type latestRow struct {
	number   int
	sum      []byte
	mem, tms int
	env      map[string]string
	caps     Capabilities
}

// latestVersion reads function id's latest version.
func (r *Registry) latestVersion(ctx context.Context, db interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, id int64) (latestRow, error) {
	var l latestRow
	err := db.QueryRow(ctx, r.q.Get("latest_version"), id).Scan(&l.number, &l.sum, &l.mem, &l.tms, &l.env, &l.caps)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return latestRow{}, err
	}
	return l, nil
}

// same reports whether a module with SHA-256 sum, cfg and env (cfg's, never
// nil) would be this version again, so that a deploy creates nothing.
func (l latestRow) same(sum []byte, cfg Config, env map[string]string) bool {
	return l.number > 0 && string(l.sum) == string(sum) && l.mem == cfg.MemoryMiB &&
		time.Duration(l.tms)*time.Millisecond == cfg.Timeout && maps.Equal(l.env, env) && l.caps.Equal(cfg.Capabilities)
}

// Deploy stores module and cfg as the next version of the named function
// and points alias (DefaultAlias when "") at it. Deploying the module and
// config of the latest version again creates nothing and only moves the
// alias back to it if needed, so applying a manifest twice is a no-op.
func (r *Registry) Deploy(ctx context.Context, account, name string, module []byte, cfg Config, alias string) (Deployment, error) {
	return r.DeployWithin(ctx, Limits{}, account, name, module, cfg, alias)
}

// DeployWithin is Deploy within the account's limits l: it fails with
// ErrLimit, storing nothing, when the deploy would create a function
// beyond l.Functions or store a new module beyond l.ModuleBytes. Deploys
// of one account check and store one at a time, so that concurrent ones
// cannot pass a limit together.
func (r *Registry) DeployWithin(ctx context.Context, l Limits, account, name string, module []byte, cfg Config, alias string) (Deployment, error) {
	alias, err := checkDeploy(name, alias, cfg)
	if err != nil {
		return Deployment{}, err
	}
	if len(module) < 8 || string(module[:4]) != string(wasmMagic) {
		return Deployment{}, fmt.Errorf("functions: deploy %s: %w: not a WebAssembly binary (no \\0asm header)", name, ErrInvalidModule)
	}
	if r.validate != nil {
		if err := r.validate(ctx, module, cfg); err != nil {
			return Deployment{}, fmt.Errorf("functions: deploy %s: %w: %w", name, ErrInvalidModule, err)
		}
	}
	sum := sha256.Sum256(module)
	env := cfg.Env
	if env == nil {
		env = map[string]string{}
	}
	envJSON, err := json.Marshal(env)
	if err != nil {
		return Deployment{}, fmt.Errorf("functions: deploy %s: env: %w", name, err)
	}

	var d Deployment
	err = pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		if l != (Limits{}) {
			if _, err := tx.Exec(ctx, r.q.Get("lock_account_deploys"), account); err != nil {
				return err
			}
			if err := r.checkLimits(ctx, tx, l, account, name, sum[:], len(module)); err != nil {
				return err
			}
		}
		var id int64
		if err := tx.QueryRow(ctx, r.q.Get("upsert_function"), account, name).Scan(&id); err != nil {
			return err
		}
		// Serialise deploys of one function so version numbers never clash.
		if err := tx.QueryRow(ctx, r.q.Get("lock_function"), account, name).Scan(&id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, r.q.Get("store_module"), sum[:], module, len(module)); err != nil {
			return err
		}
		latest, err := r.latestVersion(ctx, tx, id)
		if err != nil {
			return err
		}
		d.Version = Version{Function: name, SHA256: hex.EncodeToString(sum[:]), SizeBytes: len(module), Config: cfg}
		d.Version.Config.Env = env
		if latest.same(sum[:], cfg, env) {
			d.Version.Number = latest.number
		} else {
			d.Version.Number, d.Created = latest.number+1, true
			if err := tx.QueryRow(ctx, r.q.Get("insert_version"), id, d.Version.Number, sum[:],
				cfg.MemoryMiB, cfg.Timeout.Milliseconds(), envJSON, cfg.Capabilities).Scan(&d.Version.CreatedAt); err != nil {
				return err
			}
		}
		moved, err := setAlias(ctx, tx, r.q, id, alias, d.Version.Number)
		d.AliasMoved = moved
		if err != nil || !d.Created {
			return err
		}
		var modules [][]byte
		if err := tx.QueryRow(ctx, r.q.Get("prune_versions"), id, KeepVersions).Scan(&modules); err != nil {
			return err
		}
		return r.deleteUnusedModules(ctx, tx, modules)
	})
	if err != nil {
		return Deployment{}, fmt.Errorf("functions: deploy %s (account %s): %w", name, account, err)
	}
	if !d.Created {
		if d.Version, err = r.Version(ctx, account, name, d.Version.Number); err != nil {
			return Deployment{}, err
		}
	}
	return d, nil
}

// setAlias points function id's alias at version, creating the alias
// unless the function has MaxAliases already.
func setAlias(ctx context.Context, tx pgx.Tx, q namedsql.Statements, id int64, alias string, version int) (moved bool, err error) {
	var (
		aliases int
		exists  bool
	)
	if err := tx.QueryRow(ctx, q.Get("alias_count"), id, alias).Scan(&aliases, &exists); err != nil {
		return false, err
	}
	if !exists && aliases >= MaxAliases {
		return false, fmt.Errorf("%w: the function has %d aliases, the most it may have; point an existing one (such as %s) instead", ErrLimit, aliases, DefaultAlias)
	}
	var prev *int
	err = tx.QueryRow(ctx, q.Get("set_alias"), id, alias, version).Scan(&prev)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil // already pointing there
	}
	return err == nil, err
}

// SetAlias points alias at an existing version of the function.
func (r *Registry) SetAlias(ctx context.Context, account, name, alias string, version int) error {
	if err := checkName("alias", alias); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		id, err := r.lock(ctx, tx, account, name)
		if err != nil {
			return err
		}
		var ok bool
		if err := tx.QueryRow(ctx, r.q.Get("version_exists"), id, version).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: function %s has no version %d", ErrNotFound, name, version)
		}
		_, err = setAlias(ctx, tx, r.q, id, alias, version)
		return err
	})
	if err != nil {
		return fmt.Errorf("functions: set alias %s of %s to version %d: %w", alias, name, version, err)
	}
	return nil
}

// Rollback moves alias back to the version it pointed at before its last
// move, and returns that version.
func (r *Registry) Rollback(ctx context.Context, account, name, alias string) (int, error) {
	if alias == "" {
		alias = DefaultAlias
	}
	var to int
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		id, err := r.lock(ctx, tx, account, name)
		if err != nil {
			return err
		}
		var cur int
		var prev *int
		err = tx.QueryRow(ctx, r.q.Get("alias_target"), id, alias).Scan(&cur, &prev)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: function %s has no alias %s", ErrNotFound, name, alias)
		}
		if err != nil {
			return err
		}
		if prev == nil {
			return fmt.Errorf("%w: alias %s of %s has pointed only at version %d", ErrNoRollback, alias, name, cur)
		}
		to = *prev
		_, err = setAlias(ctx, tx, r.q, id, alias, to)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("functions: roll back %s of %s: %w", alias, name, err)
	}
	return to, nil
}

func (r *Registry) lock(ctx context.Context, tx pgx.Tx, account, name string) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, r.q.Get("lock_function"), account, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: function %s in account %s", ErrNotFound, name, account)
	}
	return id, err
}

func scanVersion(row pgx.Row) (Version, error) {
	var v Version
	var sum []byte
	var tms int64
	if err := row.Scan(&v.Function, &v.Number, &sum, &v.SizeBytes, &v.MemoryMiB, &tms, &v.Env, &v.Capabilities, &v.CreatedAt); err != nil {
		return Version{}, err
	}
	v.SHA256 = hex.EncodeToString(sum)
	v.Timeout = time.Duration(tms) * time.Millisecond
	return v, nil
}

// Resolve returns the version alias points at.
func (r *Registry) Resolve(ctx context.Context, account, name, alias string) (Version, error) {
	if alias == "" {
		alias = DefaultAlias
	}
	v, err := scanVersion(r.pool.QueryRow(ctx, r.q.Get("resolve"), account, name, alias))
	if errors.Is(err, pgx.ErrNoRows) {
		return Version{}, fmt.Errorf("functions: resolve %s@%s (account %s): %w", name, alias, account, ErrNotFound)
	}
	if err != nil {
		return Version{}, fmt.Errorf("functions: resolve %s@%s (account %s): %w", name, alias, account, err)
	}
	return v, nil
}

// Ref names an alias of a function in an account.
type Ref struct {
	Account, Function, Alias string
}

// ResolveAll returns, in one statement, the version each ref's alias points
// at, by ref (an empty Alias means DefaultAlias). Refs whose function or
// alias does not exist are absent from the result.
func (r *Registry) ResolveAll(ctx context.Context, refs []Ref) (map[Ref]Version, error) {
	accounts, names, aliases := make([]string, len(refs)), make([]string, len(refs)), make([]string, len(refs))
	for i, ref := range refs {
		if ref.Alias == "" {
			ref.Alias = DefaultAlias
		}
		accounts[i], names[i], aliases[i] = ref.Account, ref.Function, ref.Alias
	}
	rows, err := r.pool.Query(ctx, r.q.Get("resolve_many"), accounts, names, aliases)
	if err != nil {
		return nil, fmt.Errorf("functions: resolve %d aliases: %w", len(refs), err)
	}
	out := make(map[Ref]Version, len(refs))
	var ref Ref
	var v Version
	var sum []byte
	var tms int64
	_, err = pgx.ForEachRow(rows, []any{&ref.Account, &ref.Alias, &v.Function, &v.Number, &sum, &v.SizeBytes,
		&v.MemoryMiB, &tms, &v.Env, &v.Capabilities, &v.CreatedAt}, func() error {
		ref.Function = v.Function
		v.SHA256 = hex.EncodeToString(sum)
		v.Timeout = time.Duration(tms) * time.Millisecond
		out[ref] = v
		v = Version{}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("functions: resolve %d aliases: %w", len(refs), err)
	}
	return out, nil
}

// Version returns one version of a function.
func (r *Registry) Version(ctx context.Context, account, name string, number int) (Version, error) {
	v, err := scanVersion(r.pool.QueryRow(ctx, r.q.Get("get_version"), account, name, number))
	if errors.Is(err, pgx.ErrNoRows) {
		return Version{}, fmt.Errorf("functions: %s version %d (account %s): %w", name, number, account, ErrNotFound)
	}
	if err != nil {
		return Version{}, fmt.Errorf("functions: %s version %d (account %s): %w", name, number, account, err)
	}
	return v, nil
}

// Versions lists every version of a function, oldest first.
func (r *Registry) Versions(ctx context.Context, account, name string) ([]Version, error) {
	rows, err := r.pool.Query(ctx, r.q.Get("list_versions"), account, name)
	if err != nil {
		return nil, fmt.Errorf("functions: versions of %s (account %s): %w", name, account, err)
	}
	vs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Version, error) { return scanVersion(row) })
	if err != nil {
		return nil, fmt.Errorf("functions: versions of %s (account %s): %w", name, account, err)
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("functions: versions of %s (account %s): %w", name, account, ErrNotFound)
	}
	return vs, nil
}

// List returns the account's functions by name.
func (r *Registry) List(ctx context.Context, account string) ([]Function, error) {
	rows, err := r.pool.Query(ctx, r.q.Get("list_functions"), account)
	if err != nil {
		return nil, fmt.Errorf("functions: list (account %s): %w", account, err)
	}
	fns, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Function, error) {
		var f Function
		err := row.Scan(&f.Name, &f.CreatedAt, &f.LatestVersion, &f.Aliases, &f.RollbackTo)
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("functions: list (account %s): %w", account, err)
	}
	return fns, nil
}

// Module returns the module bytes with the given hex SHA-256.
func (r *Registry) Module(ctx context.Context, sha256Hex string) ([]byte, error) {
	sum, err := hex.DecodeString(sha256Hex)
	if err != nil || len(sum) != sha256.Size {
		return nil, fmt.Errorf("functions: module %q: %w: want 64 hex digits", sha256Hex, ErrInvalidName)
	}
	var module []byte
	err = r.pool.QueryRow(ctx, r.q.Get("module"), sum).Scan(&module)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("functions: module %s: %w", sha256Hex, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("functions: module %s: %w", sha256Hex, err)
	}
	return module, nil
}

// deleteUnusedModules deletes those of modules no version of any account
// uses, but for one a deploy is storing at the moment (lock_modules).
func (r *Registry) deleteUnusedModules(ctx context.Context, tx pgx.Tx, modules [][]byte) error {
	if len(modules) == 0 {
		return nil
	}
	rows, _ := tx.Query(ctx, r.q.Get("lock_modules"), modules)
	locked, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil || len(locked) == 0 {
		return err
	}
	_, err = tx.Exec(ctx, r.q.Get("delete_unused_modules"), locked)
	return err
}

// Delete removes a function with all its versions and aliases, and the
// modules no other version (of any account) uses.
func (r *Registry) Delete(ctx context.Context, account, name string) error {
	var found bool
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		var modules [][]byte
		if err := tx.QueryRow(ctx, r.q.Get("delete_function"), account, name).Scan(&found, &modules); err != nil || !found {
			return err
		}
		return r.deleteUnusedModules(ctx, tx, modules)
	})
	if err != nil {
		return fmt.Errorf("functions: delete %s (account %s): %w", name, account, err)
	}
	if !found {
		return fmt.Errorf("functions: delete %s (account %s): %w", name, account, ErrNotFound)
	}
	return nil
}
