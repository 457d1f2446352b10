// Package keys creates the HTTP API's access keys (table access_keys, of
// the migration line in package server/migrations). The server
// authorizes requests with them; the CLI creates the first key of a new
// database through this package without starting a server.
package keys

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/namedsql"
	"github.com/sluicehq/sluice/pgqueue"
)

// Scopes an access key may hold (see docs/http-api.md).
const (
	ScopeSend   = "mq:send"
	ScopeRecv   = "mq:receive"
	ScopeDelete = "mq:delete"
	ScopePurge  = "mq:purge"
	ScopeAdmin  = "mq:admin"
	ScopeAllMQ  = "mq:*"
	ScopeDeploy = "functions:deploy"
	// ScopeInvoke runs deployed functions (POST .../functions/{name}/invoke).
	ScopeInvoke = "functions:invoke"
	// ScopeMetrics reads GET /metrics: the key's account's series only.
	ScopeMetrics = "metrics:read"
	// Key-value stores: read (get, list), write (set, delete), or both.
	ScopeKVRead  = "kv:read"
	ScopeKVWrite = "kv:write"
	ScopeAllKV   = "kv:*"
)

// Scopes are every scope a key may hold.
var Scopes = []string{ScopeSend, ScopeRecv, ScopeDelete, ScopePurge, ScopeAdmin, ScopeAllMQ, ScopeDeploy, ScopeInvoke, ScopeMetrics,
	ScopeKVRead, ScopeKVWrite, ScopeAllKV}

// ErrInvalid is returned for an account, scopes, queue patterns or a
// description a key cannot have; the message says what is allowed.
var ErrInvalid = errors.New("invalid access key")

var accountRE = regexp.MustCompile(`^[0-9]{12}$`)

//go:embed queries.sql
var queriesSQL string

// Store creates access keys in one database schema. It is safe for
// concurrent use.
type Store struct {
	pool  *pgxpool.Pool
	queue *pgqueue.Client
	q     namedsql.Statements
}

// NewStore returns a Store in the queue client's (migrated) schema; the
// queue client creates a key's account when it does not exist yet.
func NewStore(queue *pgqueue.Client) (*Store, error) {
	if queue == nil {
		return nil, errors.New("keys: new store: queue client is nil")
	}
	return &Store{pool: queue.Pool(), queue: queue, q: namedsql.MustParse(queriesSQL, queue.Schema())}, nil
}

// Create creates an access key of account (creating the account if it
// does not exist yet) with the given scopes, limited to the queue-name
// patterns queues (path.Match syntax; nil means every queue), and returns
// its id and secret. The secret is not stored, only its SHA-256: it cannot
// be shown again. Clients send "Authorization: Bearer <id>:<secret>".
func (s *Store) Create(ctx context.Context, account string, scopes, queues []string, description string) (id, secret string, err error) {
	if !accountRE.MatchString(account) {
		return "", "", fmt.Errorf("create key: %w: account %q: use exactly 12 digits", ErrInvalid, account)
	}
	if len(queues) == 0 {
		queues = []string{"*"}
	}
	if err := CheckSpec(scopes, queues, description); err != nil {
		return "", "", fmt.Errorf("create key in account %s: %w", account, err)
	}
	id, secret, hash := newMaterial()
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.queue.EnsureAccountTx(ctx, tx, account); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, s.q.Get("create_key"), id, account, hash[:], scopes, queues, description)
		return err
	})
	if err != nil {
		return "", "", fmt.Errorf("create key in account %s: %w", account, err)
	}
	return id, secret, nil
}

// CheckSpec checks what a key would be granted: at least one known scope,
// at most 100 queue patterns of 1-80 characters, a description of at most
// 200 bytes. Its errors wrap ErrInvalid.
func CheckSpec(scopes, queues []string, description string) error {
	if len(scopes) == 0 {
		return fmt.Errorf("%w: no scopes: give at least one of %s", ErrInvalid, strings.Join(Scopes, ", "))
	}
	for _, sc := range scopes {
		if !slices.Contains(Scopes, sc) {
			return fmt.Errorf("%w: unknown scope %q: use %s", ErrInvalid, truncate(sc, 40), strings.Join(Scopes, ", "))
		}
	}
	if len(queues) > 100 {
		return fmt.Errorf("%w: %d queue patterns: use at most 100", ErrInvalid, len(queues))
	}
	for _, p := range queues {
		if _, err := path.Match(p, ""); err != nil || p == "" || len(p) > 80 {
			return fmt.Errorf("%w: queue pattern %q: use 1-80 characters of path.Match syntax, e.g. orders-*", ErrInvalid, truncate(p, 90))
		}
	}
	if len(description) > 200 {
		return fmt.Errorf("%w: description of %d bytes: use at most 200", ErrInvalid, len(description))
	}
	return nil
}

// IDAlphabet are the characters of a key id after its "sk_" prefix.
const IDAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// newMaterial returns a fresh key id (sk_ and 20 random characters), a
// 256-bit secret and the secret's SHA-256.
func newMaterial() (id, secret string, hash [32]byte) {
	var b [20 + 32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	idb := make([]byte, 20)
	for i := range idb {
		idb[i] = IDAlphabet[int(b[i])%len(IDAlphabet)]
	}
	secret = base64.RawURLEncoding.EncodeToString(b[20:])
	return "sk_" + string(idb), secret, sha256.Sum256([]byte(secret))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
