package functions

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Bounds and defaults of a function's limits (Config.MemoryMiB and
// Config.Timeout).
const (
	MinMemoryMiB, MaxMemoryMiB, DefaultMemoryMiB = 1, 4096, 64
	MaxTimeout, DefaultTimeout                   = 15 * time.Minute, 30 * time.Second
)

// MaxEmitPatterns bounds the emits patterns of one function.
const MaxEmitPatterns = 100

// Bounds of what a function keeps. MaxConfigBytes bounds one version's
// env and capabilities as stored (JSON); MaxAliases the aliases of a
// function; a deploy keeps the function's newest KeepVersions versions
// and deletes older ones no alias points at or rolls back to (with the
// modules no other version uses).
const (
	MaxConfigBytes = 64 << 10
	MaxAliases     = 100
	KeepVersions   = 100
)

// CheckEmitPattern says whether p is a valid emits pattern: a queue or
// topic name (1-80 of A-Za-z0-9_-) that may hold the wildcards * (any
// run of characters), ? (one) and [...] classes of path.Match, such as
// "orders-*" or "audit".
func CheckEmitPattern(p string) error {
	if len(p) == 0 || len(p) > 80 {
		return fmt.Errorf("emits pattern %q: use 1 to 80 characters", p)
	}
	if strings.ContainsAny(p, "/\\") {
		return fmt.Errorf("emits pattern %q: a queue or topic name holds no / or \\", p)
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("emits pattern %q: %w", p, err)
	}
	return nil
}

// Limits bound what one account's functions hold (Registry.DeployWithin):
// how many functions, and the size of the distinct modules stored for
// them, every version of every function. A zero field is no limit.
type Limits struct {
	Functions   int
	ModuleBytes int64
}

// CheckLimits says whether deploying module to the account's function
// name would stay within l, as DeployWithin will check again when it
// stores it: a deploy beyond them can be refused before its module is
// compiled. The error wraps ErrLimit and says what the account holds.
func (r *Registry) CheckLimits(ctx context.Context, l Limits, account, name string, module []byte) error {
	sum := sha256.Sum256(module)
	return r.checkLimits(ctx, r.pool, l, account, name, sum[:], len(module))
}

func (r *Registry) checkLimits(ctx context.Context, db interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, l Limits, account, name string, sum []byte, size int) error {
	var (
		functions   int
		exists, dup bool
		stored      int64
	)
	if err := db.QueryRow(ctx, r.q.Get("account_usage"), account, name, sum).Scan(&functions, &exists, &stored, &dup); err != nil {
		return fmt.Errorf("functions: usage of account %s: %w", account, err)
	}
	if l.Functions > 0 && !exists && functions >= l.Functions {
		return fmt.Errorf("functions: deploy %s: %w: account %s has reached its limit of %d functions; delete some, or ask the operator to raise the limit",
			name, ErrLimit, account, l.Functions)
	}
	if l.ModuleBytes > 0 && !dup && stored+int64(size) > l.ModuleBytes {
		return fmt.Errorf("functions: deploy %s: %w: account %s stores %d bytes of modules; this one (%d bytes) would pass its limit of %d bytes; delete old functions, or ask the operator to raise the limit",
			name, ErrLimit, account, stored, size, l.ModuleBytes)
	}
	return nil
}
