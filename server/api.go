package server

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/internal/namedsql"
	"github.com/sluicehq/sluice/internal/ttlcache"
	"github.com/sluicehq/sluice/kv"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/server/internal/jsonbody"
	"github.com/sluicehq/sluice/server/migrations"
	"github.com/sluicehq/sluice/triggers"
	"github.com/sluicehq/sluice/triggers/webhook"
	"github.com/sluicehq/sluice/wire"
)

//go:embed queries.sql
var queriesSQL string

// APIMigrations is the HTTP API's migration line; it applies after the
// triggers' line. Its first migration creates the access keys and, for
// history's sake, the hooks and webhook deliveries tables, which package
// triggers owns (see RATIONALE.md).
var APIMigrations = migrations.API

// Limits of the HTTP API (see docs/http-api.md).
const (
	maxBodyBytes   = 1 << 20  // every JSON request body and webhook
	maxModuleBytes = 64 << 20 // a module upload
	maxJSONDepth   = 64
	maxBatch       = 10
	maxDelay       = 43200   // seconds, for delays and visibility timeouts
	maxExpires     = 1209600 // seconds, a message's time to live (14 days)
	maxEntries     = 1000    // entries of one send of entries
	// keyCacheTTL bounds how long a verified (or unknown) key is trusted
	// without asking the database: a revoke takes effect everywhere
	// within it, and at once in the process that revoked.
	keyCacheTTL = 5 * time.Second
)

// api is the HTTP API's state: statements, the key cache, metrics.
type api struct {
	s    *Server
	log  zerolog.Logger
	q    namedsql.Statements
	keys *keyCache
	// authFails rate-limits authentication failures per client address;
	// keyQueries counts key lookups that reached the database.
	authFails  *authLimiter
	keyQueries atomic.Int64
	metrics    *metrics

	data, manage, hooks, ops *http.ServeMux
	nextPrune                atomic.Int64 // unix nanos of the next delivery prune
	nextAuthPrune            atomic.Int64 // unix nanos of the next auth_failures prune
	// webhookReads are the webhook bodies being read, shared by client
	// address and account (Config.WebhookReads); pageReads the peek and
	// dead-letter pages being read and answered, shared by account
	// (Config.PageReads).
	webhookReads, pageReads *readSlots
	// statsReads are the queue stats being read (maxStatsReads), shared
	// by account: each scans its queues' messages.
	statsReads *readSlots
	// received counts the bytes of received messages held until their
	// answers are written (Config.ReceiveBytes).
	received *heldBytes
	// messageBytes are queues' max_message_bytes by "account/queue", for
	// what a receive's claim holds (messageBytesOf).
	messageBytes *ttlcache.Cache[string, int64]
	// invokes holds a token per invoke call running (maxInvokes).
	invokes chan struct{}
	// changeLocks holds a token per request holding an account's change
	// lock (exclusive).
	changeLocks chan struct{}

	// stopping is closed when an http.Server serving the API shuts down,
	// which ends long polls at once (with what they have: nothing).
	stopping chan struct{}
	stopOnce sync.Once
	hooked   sync.Map // *http.Server → true once its shutdown is watched

	deploys deployJobs    // deploys compiling in the background
	slots   *accountSlots // what accounts hold at once: deploys, log streams
}

func newAPI(s *Server) *api {
	a := &api{s: s, log: s.log, q: namedsql.MustParse(queriesSQL, s.cfg.Schema), keys: newKeyCache(keyCacheTTL),
		authFails: newAuthLimiter(s.cfg.AuthFailuresPerMinute),
		stopping:  make(chan struct{}), webhookReads: newReadSlots(s.cfg.WebhookReads), invokes: make(chan struct{}, maxInvokes),
		pageReads: newReadSlots(s.cfg.PageReads), statsReads: newReadSlots(maxStatsReads),
		received:     newHeldBytes(s.cfg.ReceiveBytes),
		messageBytes: ttlcache.New[string, int64](limitsCacheTTL, limitsCacheSize),
		changeLocks:  make(chan struct{}, changeLockHolders(s.cfg.MaxConns))}
	a.slots = &accountSlots{pool: s.pool, q: a.q, log: s.log, lease: slotLease}
	a.deploys.slots = a.slots
	a.metrics = newMetrics(a)
	a.routes()
	return a
}

// randomID is 12 random bytes in hex: a deploy's id, a slot holder's.
func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// dueEvery reports whether work guarded by next (unix nanos) is due now,
// and if so moves next on by every: at most one caller a period in this
// process is told true.
func dueEvery(next *atomic.Int64, every time.Duration) bool {
	now := time.Now().UnixNano()
	n := next.Load()
	return now >= n && next.CompareAndSwap(n, now+int64(every))
}

// apiError is an error the API returns as {"error": {"code", "message"}}.
type apiError struct {
	Status  int
	Code    string
	Message string
	// RetryAfter, when set, is sent as the Retry-After header (seconds).
	RetryAfter int
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// tooManyRequests is a 429 asking the client to retry after retryAfter
// seconds.
func tooManyRequests(retryAfter int, format string, args ...any) *apiError {
	e := errorf(http.StatusTooManyRequests, wire.CodeTooManyRequests, format, args...)
	e.RetryAfter = retryAfter
	return e
}

func badRequest(format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, "invalid_argument", format, args...)
}

// handler is a route's function: it writes its success response and
// returns its failure, which ServeHTTP renders.
type handler func(w http.ResponseWriter, r *http.Request, c *call) error

// ServeHTTP routes by the first path segment: /v1/... is management,
// /hooks/... webhooks, /healthz, /readyz and /metrics operations, and
// anything else the data plane /{account}/{queue}/...
func (a *api) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	w := &responseWriter{ResponseWriter: rw, answerTime: a.s.cfg.AnswerWriteTimeout}
	route := "unmatched"
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			a.log.Error().Str("method", r.Method).Str("path", r.URL.Path).
				Str("panic", fmt.Sprint(v)).Bytes("stack", debug.Stack()).Msg("http handler panicked")
			if !w.wrote {
				a.writeError(w, r, errorf(http.StatusInternalServerError, "internal", "internal error; the server log has the details"))
			}
		}
		d := time.Since(start)
		a.metrics.observeRequest(route, w.status(), d)
		a.log.Debug().Str("method", r.Method).Str("path", r.URL.Path).Str("route", route).
			Int("status", w.status()).Float64("duration_ms", float64(d.Microseconds())/1000).Msg("http request")
	}()
	a.watchShutdown(r)
	p := r.URL.Path
	if p == "" || p[0] != '/' || path.Clean(p) != p && path.Clean(p)+"/" != p {
		a.writeError(w, r, badRequest("path %q is not canonical: no . or .. segments or repeated slashes", truncate(p, 200)))
		return
	}
	first, _, _ := strings.Cut(p[1:], "/")
	mux := a.data
	switch first {
	case "v1":
		mux = a.manage
	case "hooks":
		mux = a.hooks
	case "healthz", "readyz", "metrics":
		mux = a.ops
	}
	h, pattern := mux.Handler(r)
	if pattern == "" {
		rec := &headerRecorder{header: http.Header{}}
		h.ServeHTTP(rec, r)
		if rec.code == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", rec.header.Get("Allow"))
			a.writeError(w, r, errorf(http.StatusMethodNotAllowed, "method_not_allowed", "method %s is not allowed on %s; allowed: %s", truncate(r.Method, 20), truncate(p, 200), rec.header.Get("Allow")))
			return
		}
		a.writeError(w, r, errorf(http.StatusNotFound, "not_found", "no route for %s %s; see docs/http-api.md", truncate(r.Method, 20), truncate(p, 200)))
		return
	}
	route = pattern
	mux.ServeHTTP(w, r)
}

// watchShutdown registers, once per http.Server, a shutdown hook that
// ends the long polls it serves: Shutdown waits for running requests, and a
// long poll would otherwise hold it up to 20 s.
func (a *api) watchShutdown(r *http.Request) {
	hs, ok := r.Context().Value(http.ServerContextKey).(*http.Server)
	if !ok {
		return
	}
	if _, seen := a.hooked.Load(hs); seen {
		return
	}
	if _, seen := a.hooked.LoadOrStore(hs, true); !seen {
		hs.RegisterOnShutdown(func() { a.stopOnce.Do(func() { close(a.stopping) }) })
	}
}

// untilShutdown returns a context ended with ctx or when the API shuts down.
func (a *api) untilShutdown(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-a.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// responseWriter remembers the status written, for metrics and for the
// panic handler, and gives the answer answerTime to be written from its
// first byte (Config.AnswerWriteTimeout; see extendWrite for streams).
type responseWriter struct {
	http.ResponseWriter
	code       int
	wrote      bool
	answerTime time.Duration
}

func (w *responseWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
		w.extendWrite()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.code, w.wrote = http.StatusOK, true
		w.extendWrite()
	}
	return w.ResponseWriter.Write(b)
}

// extendWrite gives what is written from now answerTime to reach the
// client; a stream calls it before each event.
func (w *responseWriter) extendWrite() {
	_ = http.NewResponseController(w.ResponseWriter).SetWriteDeadline(time.Now().Add(w.answerTime))
}

// extendWrite calls the extendWrite of the responseWriter w is or wraps.
func extendWrite(w http.ResponseWriter) {
	for {
		switch v := w.(type) {
		case *responseWriter:
			v.extendWrite()
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = v.Unwrap()
		default:
			return
		}
	}
}

func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *responseWriter) status() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.code
}

// headerRecorder captures what ServeMux's own 404 and 405 handlers write,
// so the API can answer in JSON instead.
type headerRecorder struct {
	header http.Header
	code   int
}

func (h *headerRecorder) Header() http.Header         { return h.header }
func (h *headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (h *headerRecorder) WriteHeader(code int)        { h.code = code }

// handle registers a route whose handler gets an authenticated call.
func (a *api) handle(mux *http.ServeMux, pattern string, scope string, h handler) {
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		c, err := a.authorize(r, scope)
		if err == nil {
			err = h(w, r, c)
		}
		if err != nil {
			a.writeError(w, r, err)
		}
	})
}

// handleOpen registers a route without access keys (webhooks).
func (a *api) handleOpen(mux *http.ServeMux, pattern string, h handler) {
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r, nil); err != nil {
			a.writeError(w, r, err)
		}
	})
}

func (a *api) routes() {
	a.data, a.manage, a.hooks, a.ops = http.NewServeMux(), http.NewServeMux(), http.NewServeMux(), http.NewServeMux()
	d := a.data
	a.handle(d, "POST /{account}/{queue}/messages", "mq:send", a.send)
	a.handle(d, "POST /{account}/{queue}/messages/entries", "mq:send", a.sendEntries)
	a.handle(d, "POST /{account}/{queue}/messages/receive", "mq:receive", a.receive)
	a.handle(d, "GET /{account}/{queue}/messages", "mq:receive", a.peek)
	a.handle(d, "DELETE /{account}/{queue}/messages/{sequence}", "mq:delete", a.deleteMessage)
	a.handle(d, "POST /{account}/{queue}/messages/{sequence}/visibility", "mq:delete", a.changeVisibility)
	a.handle(d, "DELETE /{account}/{queue}/messages", "mq:purge", a.purge)
	a.handle(d, "GET /{account}/{queue}/dlq", "mq:receive", a.receiveDLQ)
	a.handle(d, "DELETE /{account}/{queue}/dlq/{sequence}", "mq:delete", a.deleteDLQ)
	a.handle(d, "DELETE /{account}/{queue}/dlq", "mq:purge", a.purgeDLQ)
	a.handle(d, "POST /{account}/{queue}/dlq/redrive", "mq:admin", a.redrive)
	a.handle(d, "POST /{account}/topics/{topic}/messages", "mq:send", a.publish)
	a.handle(d, "POST /{account}/topics/{topic}/messages/entries", "mq:send", a.publishEntries)

	m, v := a.manage, "/v1/accounts/{account}"
	a.handle(m, "GET "+v+"/queues", "mq:receive", a.listQueues)
	a.handle(m, "POST "+v+"/queues", "mq:admin", a.createQueue)
	a.handle(m, "GET "+v+"/queues/{queue}", "mq:receive", a.getQueue)
	a.handle(m, "GET "+v+"/queues/{queue}/stats", "mq:receive", a.queueMinuteStats)
	a.handle(m, "PATCH "+v+"/queues/{queue}", "mq:admin", a.updateQueue)
	a.handle(m, "DELETE "+v+"/queues/{queue}", "mq:admin", a.deleteQueue)
	a.handle(m, "GET "+v+"/topics", "mq:receive", a.listTopics)
	a.handle(m, "POST "+v+"/topics", "mq:admin", a.createTopic)
	a.handle(m, "GET "+v+"/topics/{topic}", "mq:receive", a.getTopic)
	a.handle(m, "DELETE "+v+"/topics/{topic}", "mq:admin", a.deleteTopic)
	a.handle(m, "PUT "+v+"/topics/{topic}/subscriptions/{queue}", "mq:admin", a.subscribe)
	a.handle(m, "DELETE "+v+"/topics/{topic}/subscriptions/{queue}", "mq:admin", a.unsubscribe)
	a.handle(m, "GET "+v+"/functions", scopeReadFunctions, a.listFunctions)
	a.handle(m, "GET "+v+"/functions/{name}", scopeReadFunctions, a.getFunction)
	a.handle(m, "POST "+v+"/functions/{name}/versions", "functions:deploy", a.deployFunction)
	a.handle(m, "GET "+v+"/functions/{name}/deployments/{id}", "functions:deploy", a.getDeployment)
	a.handle(m, "PUT "+v+"/functions/{name}/aliases/{alias}", "functions:deploy", a.setAlias)
	a.handle(m, "POST "+v+"/functions/{name}/rollback", "functions:deploy", a.rollback)
	a.handle(m, "POST "+v+"/functions/{name}/invoke", ScopeInvoke, a.invokeFunction)
	a.handle(m, "GET "+v+"/triggers", "mq:admin", a.listTriggers)
	a.handle(m, "PUT "+v+"/triggers/{name}", "mq:admin", a.putTrigger)
	a.handle(m, "DELETE "+v+"/triggers/{name}", "mq:admin", a.deleteTrigger)
	a.handle(m, "GET "+v+"/triggers/{name}", "mq:admin", a.getTrigger)
	a.handle(m, "POST "+v+"/triggers/{name}/enable", "mq:admin", a.enableTrigger)
	a.handle(m, "POST "+v+"/triggers/{name}/disable", "mq:admin", a.disableTrigger)
	a.handle(m, "GET "+v+"/invocations", "mq:admin", a.listInvocations)
	a.handle(m, "GET "+v+"/invocations/{id}", "mq:admin", a.getInvocation)
	a.handle(m, "GET "+v+"/logs", "mq:admin", a.streamLogs)
	a.handle(m, "GET "+v+"/keys", "mq:admin", a.listKeys)
	a.handle(m, "POST "+v+"/keys", "mq:admin", a.createKey)
	a.handle(m, "DELETE "+v+"/keys/{id}", "mq:admin", a.revokeKey)
	a.handle(m, "GET "+v+"/kv/{store}", ScopeKVRead, a.kvList)
	a.handle(m, "GET "+v+"/kv/{store}/keys/{key...}", ScopeKVRead, a.kvGet)
	a.handle(m, "PUT "+v+"/kv/{store}/keys/{key...}", ScopeKVWrite, a.kvPut)
	a.handle(m, "DELETE "+v+"/kv/{store}/keys/{key...}", ScopeKVWrite, a.kvDelete)
	a.handle(m, "GET "+v+"/hooks", "mq:admin", a.listHooks)
	a.handle(m, "POST "+v+"/hooks", "mq:admin", a.createHook)
	a.handle(m, "DELETE "+v+"/hooks/{name}", "mq:admin", a.deleteHook)
	a.handle(m, "DELETE "+v+"/functions/{name}", "functions:deploy", a.deleteFunction)
	a.handle(m, "GET "+v+"/apps", "mq:admin", a.listApps)
	a.handle(m, "GET "+v+"/apps/{app}", "mq:admin", a.getApp)
	a.handle(m, "DELETE "+v+"/apps/{app}", "mq:admin", a.deleteApp)
	a.handle(m, "POST "+v+"/apps/{app}/plan", "mq:admin", a.planApp)
	a.handle(m, "PUT "+v+"/apps/{app}/{kind}/{name}", "mq:admin", a.setResourceApp)
	a.handle(m, "GET "+v+"/deploy/state", "mq:admin", a.deployState)

	a.handleOpen(a.hooks, "POST /hooks/{account}/{hook}", a.receiveWebhook)

	a.ops.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	a.ops.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := a.s.pool.Ping(ctx); err != nil {
			a.log.Warn().Err(err).Msg("readyz: database not reachable")
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable",
				"error": wire.ErrorBody{Code: "unavailable", Message: "database not reachable"}})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	a.ops.Handle("GET /metrics", a.metrics.accountHandler())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own response types are marshalled: a programmer error.
		panic(fmt.Sprintf("server: marshal response: %v", err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// Two writes: appending the newline would copy a large answer whole.
	if _, err := w.Write(b); err == nil {
		_, _ = w.Write(newline)
	}
}

var newline = []byte{'\n'}

// writeMessages answers 200 with {"messages": [...], "next": N} (next left
// out when 0): the JSON of wire.MessageList and wire.DeadLetterList, byte
// for byte, written one message at a time. A receive's or a page's answer
// (up to 10 MiB, 8 MiB of bodies) is thus never held encoded whole beside
// its messages while a slow client reads it, only the message being
// written.
func writeMessages[T any](w http.ResponseWriter, ms []T, next int64) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if _, err := io.WriteString(w, `{"messages":[`); err != nil {
		return
	}
	for i, m := range ms {
		b, err := json.Marshal(m)
		if err != nil {
			// Only our own response types are marshalled: a programmer error.
			panic(fmt.Sprintf("server: marshal message: %v", err))
		}
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return
			}
		}
		if _, err := w.Write(b); err != nil {
			return
		}
	}
	end := "]}\n"
	if next != 0 {
		end = `],"next":` + strconv.FormatInt(next, 10) + "}\n"
	}
	_, _ = io.WriteString(w, end)
}

func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := a.toAPIError(err)
	switch {
	case e.Status >= 500:
		a.log.Error().Err(err).Str("method", r.Method).Str("path", r.URL.Path).Int("status", e.Status).Msg("http request failed")
	case e.Status == statusClientClosed:
		a.log.Debug().Err(err).Str("path", r.URL.Path).Msg("client went away")
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	writeJSON(w, e.Status, wire.ErrorResponse{Error: wire.ErrorBody{Code: e.Code, Message: e.Message}})
}

// statusClientClosed is logged (and counted) when the client hung up
// before the answer; it never reaches a client.
const statusClientClosed = 499

// pgqueueKinds maps the queue core's error kinds to API errors. The
// SQLSTATEs of the SQL API reach it through pgqueue.AsError, their one
// mapping, whoever ran the statement.
var pgqueueKinds = []struct {
	kind   error
	status int
	code   string
}{
	{pgqueue.ErrQueueNotFound, http.StatusNotFound, "queue_not_found"},
	{pgqueue.ErrQueueExists, http.StatusConflict, "queue_exists"},
	{pgqueue.ErrInvalidName, http.StatusBadRequest, "invalid_name"},
	{pgqueue.ErrMessageTooLarge, http.StatusRequestEntityTooLarge, "message_too_large"},
	{pgqueue.ErrInvalidArgument, http.StatusBadRequest, "invalid_argument"},
	{pgqueue.ErrStaleReceipt, http.StatusConflict, "stale_receipt"},
	{pgqueue.ErrMessageNotFound, http.StatusNotFound, "message_not_found"},
	{pgqueue.ErrTopicNotFound, http.StatusNotFound, "topic_not_found"},
	{pgqueue.ErrTopicExists, http.StatusConflict, "topic_exists"},
	{pgqueue.ErrAccountNotFound, http.StatusNotFound, "not_found"},
	{pgqueue.ErrAccountExists, http.StatusConflict, "conflict"},
	{pgqueue.ErrQueueInUse, http.StatusConflict, "queue_in_use"},
	{pgqueue.ErrStoredBytesLimit, http.StatusForbidden, "limit_exceeded"},
}

// toAPIError maps any error to what the client sees. Errors it does not
// know are internal (500) and logged, never shown.
func (a *api) toAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	if qe, ok := pgqueue.AsError(err); ok {
		for _, k := range pgqueueKinds {
			if errors.Is(qe, k.kind) {
				return &apiError{Status: k.status, Code: k.code, Message: qe.Message}
			}
		}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23514" || pe.Code == "23502" || strings.HasPrefix(pe.Code, "22"):
			return badRequest("%s", pe.Message)
		case pe.Code == "23505":
			return errorf(http.StatusConflict, "conflict", "%s", pe.Message)
		case pe.Code == "23503":
			return errorf(http.StatusNotFound, "not_found", "%s", pe.Message)
		case strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P") || pe.Code == "53300":
			return errorf(http.StatusServiceUnavailable, "unavailable", "database unavailable; retry later")
		}
	}
	switch {
	case errors.Is(err, functions.ErrNotFound), errors.Is(err, triggers.ErrNotFound):
		return errorf(http.StatusNotFound, "not_found", "%s", trimPkg(err))
	case errors.Is(err, functions.ErrInvalidName):
		return errorf(http.StatusBadRequest, "invalid_name", "%s", trimPkg(err))
	case errors.Is(err, functions.ErrInvalidConfig), errors.Is(err, functions.ErrInvalidModule), errors.Is(err, kv.ErrInvalid):
		return badRequest("%s", trimPkg(err))
	case errors.Is(err, kv.ErrQuota), errors.Is(err, functions.ErrLimit):
		return errorf(http.StatusForbidden, "limit_exceeded", "%s", trimPkg(err))
	case errors.Is(err, functions.ErrNoRollback):
		return errorf(http.StatusConflict, "conflict", "%s", trimPkg(err))
	case errors.Is(err, webhook.ErrSignatureMismatch):
		// Not webhook's message, which counts the hook's secrets.
		return errorf(http.StatusUnauthorized, "invalid_signature", "the signature does not match the body under the hook's secrets")
	case errors.Is(err, webhook.ErrMissingSignature), errors.Is(err, webhook.ErrMalformedSignature),
		errors.Is(err, webhook.ErrTimestampOutOfTolerance):
		return errorf(http.StatusUnauthorized, "invalid_signature", "%s", trimPkg(err))
	case errors.Is(err, webhook.ErrMissingDeliveryID):
		return badRequest("%s", trimPkg(err))
	case errors.Is(err, webhook.ErrBodyTooDeep):
		return errorf(http.StatusBadRequest, "invalid_json", "%s", trimPkg(err))
	case errors.Is(err, context.Canceled):
		return errorf(statusClientClosed, "canceled", "request canceled")
	case errors.Is(err, context.DeadlineExceeded), pgconn.Timeout(err), isConnError(err):
		return errorf(http.StatusServiceUnavailable, "unavailable", "database unavailable; retry later")
	}
	return errorf(http.StatusInternalServerError, "internal", "internal error; the server log has the details")
}

// isConnError reports a database that cannot be reached: a failed
// connect, or the pool closed under a request during shutdown (pgxpool
// reports that only as the text "closed pool").
func isConnError(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) || strings.Contains(err.Error(), "closed pool")
}

// trimPkg drops the "package: " prefix of an error message.
func trimPkg(err error) string {
	msg := err.Error()
	for _, p := range []string{"functions: ", "triggers: ", "kv: ", "webhook: ", "pgqueue: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}

// readBody reads a request body of the given media type, at most limit
// bytes. An empty body is returned as nil when optional.
func readBody(w http.ResponseWriter, r *http.Request, mediaType string, limit int64, optional bool) ([]byte, error) {
	if optional && r.ContentLength == 0 {
		return nil, nil
	}
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != mediaType {
		return nil, errorf(http.StatusUnsupportedMediaType, "unsupported_media_type",
			"content type %q is not supported here: send Content-Type: %s", ct, mediaType)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return nil, errorf(http.StatusUnsupportedMediaType, "unsupported_media_type",
			"charset %q is not supported: send UTF-8", cs)
	}
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(limit)
		}
		return nil, errorf(http.StatusBadRequest, "invalid_argument", "reading the request body: %v", err)
	}
	if len(body) == 0 && optional {
		return nil, nil
	}
	return body, nil
}

func tooLarge(limit int64) *apiError {
	return errorf(http.StatusRequestEntityTooLarge, "body_too_large", "request body is over the limit of %d bytes", limit)
}

// readJSON reads a JSON body and checks it is one valid JSON value.
func readJSON(w http.ResponseWriter, r *http.Request, optional bool) ([]byte, error) {
	body, err := readBody(w, r, "application/json", maxBodyBytes, optional)
	if err != nil || body == nil {
		return body, err
	}
	if err := checkJSON(body); err != nil {
		return nil, err
	}
	return body, nil
}

func checkJSON(body []byte) error {
	if err := jsonbody.Check(body, maxJSONDepth); err != nil {
		return errorf(http.StatusBadRequest, "invalid_json", "request body: %v", err)
	}
	return nil
}

// decodeJSON decodes a checked JSON body into v, refusing unknown fields.
func decodeJSON(body []byte, v any) error {
	if body == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field == "" {
				return badRequest("request body: expected a JSON %s, got %s", jsonKind(te.Type.Kind().String()), te.Value)
			}
			return badRequest("field %s: expected a JSON %s, got %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		}
		if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return badRequest("unknown field %s in the request body", msg)
		}
		return badRequest("request body: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "struct", "map":
		return "object"
	case "slice", "array":
		return "array"
	case "bool":
		return "boolean"
	}
	return goKind
}

// number is a JSON field holding an integer that is range-checked after
// decoding, so every bad value gets a message naming the field and range.
type number struct {
	raw string
	set bool
}

// UnmarshalJSON keeps the raw value; null counts as absent.
func (n *number) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = number{}
		return nil
	}
	*n = number{raw: string(b), set: true}
	return nil
}

// integer checks that raw is a decimal integer in [min, max].
func integer(name, raw string, min, max int64) (int64, error) {
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || v < min || v > max || (len(raw) > 1 && raw[0] == '0') || strings.HasPrefix(raw, "+") {
		return 0, badRequest("invalid %s %s: use an integer from %d to %d", name, truncate(raw, 40), min, max)
	}
	return v, nil
}

// get returns the number, or def when absent.
func (n number) get(name string, min, max, def int64) (int64, error) {
	if !n.set {
		return def, nil
	}
	return integer(name, n.raw, min, max)
}

// queryInt reads an integer query parameter in [min, max], def if absent.
func queryInt(r *http.Request, name string, min, max, def int64) (int64, error) {
	vals, ok := r.URL.Query()[name]
	if !ok {
		return def, nil
	}
	if len(vals) != 1 {
		return 0, badRequest("query parameter %s is given %d times: give it once", name, len(vals))
	}
	return integer(name, vals[0], min, max)
}

// queryBool reads true/false (absent = false).
func queryBool(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	switch v {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	}
	return false, badRequest("invalid %s %q: use true or false", name, truncate(v, 40))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
