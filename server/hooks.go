package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

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
// whether it was created. It checks the hook (triggers.Hook.Check) and
// that the queue exists.
func (s *Server) PutHook(ctx context.Context, account string, h Hook) (created bool, err error) {
	th := triggers.Hook{Account: account, Name: h.Name, Queue: h.Queue, Verify: h.Verify, Secrets: h.Secrets, Source: h.Source}
	if err := th.Check(); err != nil {
		return false, hookAPIError(err)
	}
	if _, err := s.queue.GetQueue(ctx, account, h.Queue); err != nil {
		return false, err
	}
	created, err = s.hooks.Put(ctx, th)
	return created, hookAPIError(err)
}

// hookAPIError maps a *triggers.HookError to a 400: invalid_name for a
// bad hook or queue name, invalid_argument for the rest. Other errors
// pass unchanged.
func hookAPIError(err error) error {
	var he *triggers.HookError
	if !errors.As(err, &he) {
		return err
	}
	code := "invalid_argument"
	if he.Field == "name" || he.Field == "queue" {
		code = "invalid_name"
	}
	return errorf(http.StatusBadRequest, code, "%s", he.Message)
}

// ListHooks lists the hooks of account by name.
func (s *Server) ListHooks(ctx context.Context, account string) ([]HookInfo, error) {
	hs, err := s.hooks.List(ctx, account)
	if err != nil {
		return nil, err
	}
	out := make([]HookInfo, 0, len(hs))
	for _, h := range hs {
		out = append(out, HookInfo{Name: h.Name, Queue: h.Queue, Verify: h.Verify, SecretCount: h.SecretCount,
			Source: h.Source, CreatedAt: h.CreatedAt.UTC(), UpdatedAt: h.UpdatedAt.UTC()})
	}
	return out, nil
}

// DeleteHook removes a hook; its delivery ids are kept until pruned.
func (s *Server) DeleteHook(ctx context.Context, account, name string) error {
	err := s.hooks.Delete(ctx, account, name)
	if errors.Is(err, triggers.ErrHookNotFound) {
		return errorf(http.StatusNotFound, "not_found", "hook %q not found in account %s", truncate(name, 90), account)
	}
	return err
}

func (a *api) listHooks(w http.ResponseWriter, r *http.Request, c *call) error {
	limit, after, err := listPage(r)
	if err != nil {
		return err
	}
	hs, err := a.s.ListHooks(r.Context(), c.account)
	if err != nil {
		return err
	}
	out := make([]wire.HookInfo, 0, len(hs))
	for _, h := range hs {
		if c.key.allowsQueue(h.Queue) {
			out = append(out, wire.HookInfo(h))
		}
	}
	out, next := pageByName(out, func(h wire.HookInfo) string { return h.Name }, limit, after)
	writeJSON(w, http.StatusOK, wire.HookList{Hooks: out, Next: next})
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
	var created bool
	err = a.exclusive(r.Context(), c.account, func() error {
		if err := a.checkHookAccess(r.Context(), c, h.Name); err != nil {
			return err
		}
		if pgqueue.ValidName(h.Name) {
			hs, err := a.s.hooks.List(r.Context(), c.account)
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(hs, func(o triggers.Hook) bool { return o.Name == h.Name }) {
				if err := a.checkLimit(r.Context(), c.account, "hooks", len(hs)); err != nil {
					return err
				}
			}
		}
		created, err = a.s.PutHook(r.Context(), c.account, h)
		return err
	})
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

// checkHookAccess refuses a key that may not touch the queue the
// existing hook name (if any) delivers to.
func (a *api) checkHookAccess(ctx context.Context, c *call, name string) error {
	if c.key.allQueues() || !pgqueue.ValidName(name) {
		return nil
	}
	old, _, err := a.s.hooks.Get(ctx, c.account, name)
	if errors.Is(err, triggers.ErrHookNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !c.key.allowsQueue(old.Queue) {
		return c.forbidQueues("hook " + name + ", which delivers to " + strconvQuote(old.Queue))
	}
	return nil
}

func (a *api) deleteHook(w http.ResponseWriter, r *http.Request, c *call) error {
	err := a.exclusive(r.Context(), c.account, func() error {
		if err := a.checkHookAccess(r.Context(), c, r.PathValue("name")); err != nil {
			return err
		}
		return a.s.DeleteHook(r.Context(), c.account, r.PathValue("name"))
	})
	if err != nil {
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
	// The hook is looked up before the body is read: requests to unknown
	// hooks cost no memory.
	ctx := r.Context()
	hook, now, err := a.s.hooks.Get(ctx, account, name)
	if errors.Is(err, triggers.ErrHookNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	if r.ContentLength > maxBodyBytes {
		return tooLarge(maxBodyBytes)
	}
	body, err := a.readWebhookBody(w, r, account)
	if err != nil {
		return err
	}
	v, err := webhook.NewVerifier(webhook.Scheme(hook.Verify), hook.Secrets...)
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
	// GitHub signs the body only, so a captured delivery stays valid under
	// any X-GitHub-Delivery: deduplicate on the signature instead (the
	// same body and secret give the same one), which covers a replay of
	// the same delivery id too.
	dedupID := d.ID
	if hook.Verify == string(webhook.SchemeGitHub) {
		dedupID = "sha256=" + strings.ToLower(strings.TrimPrefix(strings.TrimSpace(r.Header.Get("X-Hub-Signature-256")), "sha256="))
	}
	seq, dup, err := a.s.hooks.Deliver(ctx, account, name, hook.Queue, dedupID, msg)
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

// webhookBodyTime bounds the reading of one webhook body (at most
// maxBodyBytes), so that a sender that trickles it holds its read slot
// that long at most.
const webhookBodyTime = 10 * time.Second

// readWebhookBody reads an unauthenticated webhook body for account's
// hook, at most maxBodyBytes within webhookBodyTime, while holding one of
// the server's webhook read slots (Config.WebhookReads), of which one
// client address holds an eighth at most and one account's hooks a
// quarter: when its share or all slots are taken it answers 503 with
// Retry-After at once rather than hold more bodies in memory.
func (a *api) readWebhookBody(w http.ResponseWriter, r *http.Request, account string) ([]byte, error) {
	n := cap(a.webhookReads.tokens)
	give, k, full := a.webhookReads.take([]string{"address " + clientAddr(r), "account " + account}, []int{share(n, 8), share(n, 4)})
	switch {
	case k != "":
		w.Header().Set("Retry-After", "1")
		return nil, errorf(http.StatusServiceUnavailable, "unavailable",
			"too many webhook deliveries are being read at once for this %s; retry later", strings.Fields(k)[0])
	case full:
		w.Header().Set("Retry-After", "1")
		return nil, errorf(http.StatusServiceUnavailable, "unavailable",
			"too many webhook deliveries are being read at once; retry later")
	}
	defer give()
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(webhookBodyTime))
	// Read in chunks against the limit: a body costs what it sends, not
	// what its Content-Length claims.
	var buf bytes.Buffer
	_, err := io.Copy(&buf, http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(maxBodyBytes)
		}
		return nil, badRequest("reading the request body: %v", err)
	}
	return buf.Bytes(), nil
}

// pruneDeliveries deletes delivery ids older than
// triggers.DeliveryRetention, at most once a minute per process and a
// bounded batch at a time.
func (a *api) pruneDeliveries(ctx context.Context) {
	if !dueEvery(&a.nextPrune, time.Minute) {
		return
	}
	if _, err := a.s.hooks.PruneDeliveries(ctx, triggers.DeliveryRetention); err != nil {
		a.log.Warn().Err(err).Msg("prune webhook deliveries")
	}
}
