package triggers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/namedsql"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/triggers/webhook"
)

// ErrHookNotFound is returned for a webhook hook that does not exist.
var ErrHookNotFound = errors.New("hook not found")

// DeliveryRetention is how long the delivery ids of enqueued webhooks are
// remembered for deduplication.
const DeliveryRetention = 7 * 24 * time.Hour

// Hook is a webhook endpoint: deliveries verified with Verify and Secrets
// (see package webhook) are enqueued to Queue. The hooks table is this
// package's, though the server's migration line creates it (see
// RATIONALE.md).
type Hook struct {
	Account string
	// Name is 1-80 characters from A-Z a-z 0-9 _ -.
	Name string
	// Queue is where deliveries go.
	Queue string
	// Verify is the signature scheme: standard, github, stripe or none.
	Verify string
	// Secrets are the signing secrets, stored as given (an HMAC needs
	// them). HookStore.List leaves them out and sets only SecretCount.
	Secrets     []string
	SecretCount int
	// Source is who owns the hook: SourceAPI or SourceManifest.
	Source    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// MaxHookSecrets is how many signing secrets a hook may have.
const MaxHookSecrets = 10

// HookError is what Hook.Check found wrong with a hook.
type HookError struct {
	// Field is the field that was wrong: "name", "queue", "verify",
	// "secrets" or "source".
	Field string
	// Message says what was wrong and what is allowed.
	Message string
}

func (e *HookError) Error() string { return e.Message }

// Check checks a hook before it is stored, whoever stores it (the HTTP
// API, a manifest deployed to the server or straight to the database):
// the hook's and the queue's names (1-80 characters from A-Z a-z 0-9 _ -),
// the Verify scheme (standard, github, stripe or none), at most
// MaxHookSecrets secrets that suit the scheme (package webhook), and
// Source ("", SourceAPI or SourceManifest). It fails with a *HookError.
// That the queue exists is the caller's to check.
func (h Hook) Check() error {
	if !pgqueue.ValidName(h.Name) {
		return &HookError{"name", fmt.Sprintf("invalid hook name %q: use 1-80 characters from A-Z a-z 0-9 _ -", truncate(h.Name, 90))}
	}
	if !pgqueue.ValidName(h.Queue) {
		return &HookError{"queue", fmt.Sprintf("invalid queue name %q: use 1-80 characters from A-Z a-z 0-9 _ -", truncate(h.Queue, 90))}
	}
	scheme, err := webhook.ParseScheme(h.Verify)
	if err != nil {
		return &HookError{"verify", fmt.Sprintf("invalid verify %q: use standard, github, stripe or none", truncate(h.Verify, 40))}
	}
	if len(h.Secrets) > MaxHookSecrets {
		return &HookError{"secrets", fmt.Sprintf("%d secrets: use at most %d", len(h.Secrets), MaxHookSecrets)}
	}
	if _, err := webhook.NewVerifier(scheme, h.Secrets...); err != nil {
		return &HookError{"secrets", fmt.Sprintf("hook %s: %s", h.Name, strings.TrimPrefix(err.Error(), "webhook: "))}
	}
	if h.Source != "" && h.Source != SourceAPI && h.Source != SourceManifest {
		return &HookError{"source", fmt.Sprintf("invalid source %q: use api or manifest", truncate(h.Source, 40))}
	}
	return nil
}

// HookStore reads and writes webhook hooks and enqueues their deliveries,
// each delivery id at most once. It is safe for concurrent use.
type HookStore struct {
	pool  *pgxpool.Pool
	queue *pgqueue.Client
	q     namedsql.Statements
}

// NewHookStore returns a HookStore that enqueues through queue, in the
// queue client's (migrated) schema.
func NewHookStore(queue *pgqueue.Client) (*HookStore, error) {
	if queue == nil {
		return nil, errors.New("triggers: new hook store: queue client is nil")
	}
	return &HookStore{pool: queue.Pool(), queue: queue, q: namedsql.MustParse(queriesSQL, queue.Schema())}, nil
}

// Put creates or replaces the hook h.Name of h.Account and reports whether
// it was created. It refuses a hook Check refuses (with its *HookError);
// callers check that the queue exists.
func (s *HookStore) Put(ctx context.Context, h Hook) (created bool, err error) {
	if err := h.Check(); err != nil {
		return false, err
	}
	if h.Source == "" {
		h.Source = SourceAPI
	}
	if h.Secrets == nil {
		h.Secrets = []string{}
	}
	err = s.pool.QueryRow(ctx, s.q.Get("put_hook"), h.Account, h.Name, h.Queue, h.Verify, h.Secrets, h.Source).Scan(&created)
	if err != nil {
		return false, fmt.Errorf("triggers: put hook %s (account %s): %w", h.Name, h.Account, err)
	}
	return created, nil
}

// Get returns a hook with its secrets, and the database's clock, which
// webhook timestamps are checked against. It fails with ErrHookNotFound.
func (s *HookStore) Get(ctx context.Context, account, name string) (Hook, time.Time, error) {
	h := Hook{Account: account, Name: name}
	var now time.Time
	err := s.pool.QueryRow(ctx, s.q.Get("get_hook"), account, name).
		Scan(&h.Queue, &h.Verify, &h.Secrets, &h.Source, &h.CreatedAt, &h.UpdatedAt, &now)
	if errors.Is(err, pgx.ErrNoRows) {
		err = ErrHookNotFound
	}
	if err != nil {
		return Hook{}, time.Time{}, fmt.Errorf("triggers: get hook %s (account %s): %w", name, account, err)
	}
	h.SecretCount = len(h.Secrets)
	return h, now, nil
}

// List returns the account's hooks by name, without their secrets.
func (s *HookStore) List(ctx context.Context, account string) ([]Hook, error) {
	rows, err := s.pool.Query(ctx, s.q.Get("list_hooks"), account)
	if err != nil {
		return nil, fmt.Errorf("triggers: list hooks (account %s): %w", account, err)
	}
	hs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Hook, error) {
		h := Hook{Account: account}
		err := r.Scan(&h.Name, &h.Queue, &h.Verify, &h.SecretCount, &h.Source, &h.CreatedAt, &h.UpdatedAt)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("triggers: list hooks (account %s): %w", account, err)
	}
	return hs, nil
}

// Delete removes a hook; its delivery ids are kept until pruned. It fails
// with ErrHookNotFound.
func (s *HookStore) Delete(ctx context.Context, account, name string) error {
	tag, err := s.pool.Exec(ctx, s.q.Get("delete_hook"), account, name)
	if err == nil && tag.RowsAffected() == 0 {
		err = ErrHookNotFound
	}
	if err != nil {
		return fmt.Errorf("triggers: delete hook %s (account %s): %w", name, account, err)
	}
	return nil
}

// Deliver sends body to queue and records the delivery id of hook in one
// transaction, and returns the message's sequence. A delivery id already
// recorded sends nothing and returns the first delivery's sequence with
// dup set; a concurrent duplicate waits for the first to commit and then
// sees it. An empty id is never deduplicated.
func (s *HookStore) Deliver(ctx context.Context, account, hook, queue, id string, body []byte) (seq int64, dup bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if id != "" {
			var claimed bool
			err := tx.QueryRow(ctx, s.q.Get("claim_delivery"), account, hook, id).Scan(&claimed)
			if errors.Is(err, pgx.ErrNoRows) {
				dup = true
				return tx.QueryRow(ctx, s.q.Get("first_delivery"), account, hook, id).Scan(&seq)
			}
			if err != nil {
				return err
			}
		}
		var err error
		if seq, err = s.queue.SendTx(ctx, tx, account, queue, pgqueue.NewMessage{Body: body}); err != nil {
			return err
		}
		if id != "" {
			_, err = tx.Exec(ctx, s.q.Get("set_delivery_sequence"), account, hook, id, seq)
		}
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("triggers: deliver %q of hook %s (account %s) to queue %s: %w", id, hook, account, queue, err)
	}
	return seq, dup, nil
}

// PruneDeliveries forgets up to 1000 delivery ids older than olderThan
// and returns how many it deleted.
func (s *HookStore) PruneDeliveries(ctx context.Context, olderThan time.Duration) (int64, error) {
	tag, err := s.pool.Exec(ctx, s.q.Get("prune_deliveries"), olderThan.Seconds())
	if err != nil {
		return 0, fmt.Errorf("triggers: prune webhook deliveries: %w", err)
	}
	return tag.RowsAffected(), nil
}
