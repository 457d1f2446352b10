package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/triggers"
	"github.com/sluicehq/sluice/triggers/webhook"
	"github.com/sluicehq/sluice/wire"
)

// Hook is a webhook endpoint, POST /hooks/{account}/{name}: requests
// verified with Verify and Secrets are enqueued to Queue as the envelope
// triggers/webhook builds. The API takes it as wire.CreateHookRequest.
type Hook struct {
	// Name is 1-80 characters from A-Z a-z 0-9 _ -.
	Name string
	// Queue is where deliveries go; it must exist.
	Queue string
	// Verify is the signature scheme: standard, github, stripe or none.
	Verify string
	// Secrets are the signing secrets (several while rotating); none
	// for scheme none. They are stored as given: an HMAC needs them.
	Secrets []string
	// Source is who owns the hook: "api" (the default) or "manifest".
	Source string
}

// HookInfo is a hook as listed: never its secrets. The API lists it as
// wire.HookInfo.
type HookInfo struct {
	Name        string
	Queue       string
	Verify      string
	SecretCount int
	Source      string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// PutHook creates or replaces the hook h.Name of account and reports
// whether it was created. It checks the scheme and secrets and that the
// queue exists.
func (s *Server) PutHook(ctx context.Context, account string, h Hook) (created bool, err error) {
	if err := checkHook(h); err != nil {
		return false, err
	}
	if _, err := s.Queue.GetQueue(ctx, account, h.Queue); err != nil {
		return false, err
	}
	if h.Source == "" {
		h.Source = triggers.SourceAPI
	}
	if h.Secrets == nil {
		h.Secrets = []string{}
	}
	var ca, ua time.Time
	err = s.Pool.QueryRow(ctx, s.api.q.Get("put_hook"), account, h.Name, h.Queue, h.Verify, h.Secrets, h.Source).Scan(&created, &ca, &ua)
	if err != nil {
		return false, fmt.Errorf("server: put hook %s in account %s: %w", h.Name, account, err)
	}
	return created, nil
}

func checkHook(h Hook) error {
	if !pgqueue.ValidName(h.Name) {
		return errorf(http.StatusBadRequest, "invalid_name", "invalid hook name %q: use 1-80 characters from A-Z a-z 0-9 _ -", truncate(h.Name, 90))
	}
	if err := checkQueueName(h.Queue); err != nil {
		return err
	}
	scheme, err := webhook.ParseScheme(h.Verify)
	if err != nil {
		return badRequest("invalid verify %q: use standard, github, stripe or none", truncate(h.Verify, 40))
	}
	if len(h.Secrets) > 10 {
		return badRequest("%d secrets: use at most 10", len(h.Secrets))
	}
	if _, err := webhook.NewVerifier(scheme, h.Secrets...); err != nil {
		return badRequest("hook %s: %s", h.Name, trimPkg(err))
	}
	if h.Source != "" && h.Source != triggers.SourceAPI && h.Source != triggers.SourceManifest {
		return badRequest("invalid source %q: use api or manifest", h.Source)
	}
	return nil
}

// ListHooks lists the hooks of account by name.
func (s *Server) ListHooks(ctx context.Context, account string) ([]HookInfo, error) {
	rows, err := s.Pool.Query(ctx, s.api.q.Get("list_hooks"), account)
	if err != nil {
		return nil, fmt.Errorf("server: list hooks of account %s: %w", account, err)
	}
	hs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (HookInfo, error) {
		var h HookInfo
		err := r.Scan(&h.Name, &h.Queue, &h.Verify, &h.SecretCount, &h.Source, &h.CreatedAt, &h.UpdatedAt)
		h.CreatedAt, h.UpdatedAt = h.CreatedAt.UTC(), h.UpdatedAt.UTC()
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("server: list hooks of account %s: %w", account, err)
	}
	return hs, nil
}

// DeleteHook removes a hook; its delivery ids are kept until pruned.
func (s *Server) DeleteHook(ctx context.Context, account, name string) error {
	tag, err := s.Pool.Exec(ctx, s.api.q.Get("delete_hook"), account, name)
	if err != nil {
		return fmt.Errorf("server: delete hook %s in account %s: %w", name, account, err)
	}
	if tag.RowsAffected() == 0 {
		return errorf(http.StatusNotFound, "not_found", "hook %q not found in account %s", truncate(name, 90), account)
	}
	return nil
}

func (a *api) listHooks(w http.ResponseWriter, r *http.Request, c *call) error {
	hs, err := a.s.ListHooks(r.Context(), c.account)
	if err != nil {
		return err
	}
	out := make([]wire.HookInfo, len(hs))
	for i, h := range hs {
		out[i] = wire.HookInfo(h)
	}
	writeJSON(w, http.StatusOK, wire.HookList{Hooks: out})
	return nil
}

func (a *api) createHook(w http.ResponseWriter, r *http.Request, c *call) error {
	body, err := readJSON(w, r, false)
	if err != nil {
		return err
	}
	var req wire.CreateHookRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	h := Hook(req)
	if pgqueue.ValidName(h.Name) && !c.key.allowsQueue(h.Queue) {
		return errorf(http.StatusForbidden, "forbidden", "access key %s may not send to queue %q", c.key.id, truncate(h.Queue, 90))
	}
	created, err := a.s.PutHook(r.Context(), c.account, h)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, wire.CreateHookResult{Name: h.Name, Queue: h.Queue, Verify: h.Verify,
		SecretCount: len(h.Secrets), Created: created})
	return nil
}

func (a *api) deleteHook(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := a.s.DeleteHook(r.Context(), c.account, r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// maxDeliveryID bounds the delivery ids remembered for deduplication.
const maxDeliveryID = 256

// receiveWebhook is POST /hooks/{account}/{hook}.
func (a *api) receiveWebhook(w http.ResponseWriter, r *http.Request, _ *call) error {
	account, name := r.PathValue("account"), r.PathValue("hook")
	notFound := errorf(http.StatusNotFound, "not_found", "hook %q not found in account %q", truncate(name, 90), truncate(account, 20))
	if !accountRE.MatchString(account) || !pgqueue.ValidName(name) {
		return notFound
	}
	if r.ContentLength > maxBodyBytes {
		return tooLarge(maxBodyBytes)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge(maxBodyBytes)
		}
		return badRequest("reading the request body: %v", err)
	}
	ctx := r.Context()
	var queue, verify string
	var secrets []string
	var now time.Time
	err = a.s.Pool.QueryRow(ctx, a.q.Get("get_hook"), account, name).Scan(&queue, &verify, &secrets, &now)
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound
	}
	if err != nil {
		return err
	}
	v, err := webhook.NewVerifier(webhook.Scheme(verify), secrets...)
	if err != nil {
		return fmt.Errorf("server: hook %s of account %s is misconfigured: %w", name, account, err)
	}
	d, err := v.Verify(r.Header, body, now)
	if err != nil {
		return err
	}
	if len(d.ID) > maxDeliveryID {
		return badRequest("delivery id of %d bytes: use at most %d", len(d.ID), maxDeliveryID)
	}
	env, err := webhook.NewEnvelope(name, r, body, d)
	if err != nil {
		return err
	}
	msg, err := env.MarshalJSON()
	if err != nil {
		return err
	}
	seq, dup, err := a.enqueueDelivery(ctx, account, name, queue, d.ID, msg)
	if err != nil {
		return err
	}
	a.pruneDeliveries(ctx)
	if dup {
		writeJSON(w, http.StatusOK, wire.WebhookResult{Duplicate: true, Sequence: seq})
		return nil
	}
	writeJSON(w, http.StatusAccepted, wire.WebhookResult{Sequence: seq})
	return nil
}

// enqueueDelivery sends msg and records the delivery id in one
// transaction. A delivery id already recorded makes it send nothing and
// return the first delivery's sequence with dup set. A concurrent
// duplicate waits on the first's row and then sees it.
func (a *api) enqueueDelivery(ctx context.Context, account, hook, queue, id string, msg []byte) (seq int64, dup bool, err error) {
	err = pgx.BeginFunc(ctx, a.s.Pool, func(tx pgx.Tx) error {
		if id != "" {
			var claimed bool
			err := tx.QueryRow(ctx, a.q.Get("claim_delivery"), account, hook, id).Scan(&claimed)
			if errors.Is(err, pgx.ErrNoRows) {
				dup = true
				return tx.QueryRow(ctx, a.q.Get("first_delivery"), account, hook, id).Scan(&seq)
			}
			if err != nil {
				return err
			}
		}
		var err error
		if seq, err = a.s.Queue.SendTx(ctx, tx, account, queue, pgqueue.NewMessage{Body: msg}); err != nil {
			return err
		}
		if id != "" {
			_, err = tx.Exec(ctx, a.q.Get("set_delivery_sequence"), account, hook, id, seq)
		}
		return err
	})
	return seq, dup, err
}

// pruneDeliveries deletes delivery ids older than deliveryRetention, at
// most once a minute per process and a bounded batch at a time.
func (a *api) pruneDeliveries(ctx context.Context) {
	now := time.Now().UnixNano()
	next := a.nextPrune.Load()
	if now < next || !a.nextPrune.CompareAndSwap(next, now+int64(time.Minute)) {
		return
	}
	if _, err := a.s.Pool.Exec(ctx, a.q.Get("prune_deliveries"), deliveryRetention.Seconds()); err != nil {
		a.log.Warn().Err(err).Msg("prune webhook deliveries")
	}
}
