package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/server/keys"
	"github.com/sluicehq/sluice/wire"
)

// Scopes an access key may hold (see docs/http-api.md and package keys).
const (
	ScopeSend   = keys.ScopeSend
	ScopeRecv   = keys.ScopeRecv
	ScopeDelete = keys.ScopeDelete
	ScopePurge  = keys.ScopePurge
	ScopeAdmin  = keys.ScopeAdmin
	ScopeAllMQ  = keys.ScopeAllMQ
	ScopeDeploy = keys.ScopeDeploy
	// ScopeInvoke runs deployed functions (POST .../functions/{name}/invoke).
	ScopeInvoke = keys.ScopeInvoke
	// ScopeMetrics reads GET /metrics: the key's account's series only.
	ScopeMetrics = keys.ScopeMetrics
	// Key-value stores: read (get, list), write (set, delete), or both.
	ScopeKVRead  = keys.ScopeKVRead
	ScopeKVWrite = keys.ScopeKVWrite
	ScopeAllKV   = keys.ScopeAllKV
)

// scopeReadFunctions marks routes that read functions: mq:admin or
// functions:deploy allows them.
const scopeReadFunctions = "functions:read"

// Key is an access key as listed: never its secret. It is what the API
// lists, wire.Key.
type Key = wire.Key

// ErrInvalidKey is returned by CreateKey for scopes, queue patterns or a
// description it refuses; the message says what is allowed.
var ErrInvalidKey = keys.ErrInvalid

var accountRE = regexp.MustCompile(`^[0-9]{12}$`)

// CreateKey creates an access key of account (creating the account if it
// does not exist yet) with the given scopes, limited to the queue-name
// patterns queues (path.Match syntax; nil means every queue), and returns
// its id and secret; see keys.Store.Create.
func (s *Server) CreateKey(ctx context.Context, account string, scopes, queues []string, description string) (id, secret string, err error) {
	id, secret, err = s.keys.Create(ctx, account, scopes, queues, description)
	if err != nil {
		return "", "", fmt.Errorf("server: %w", err)
	}
	return id, secret, nil
}

// RevokeKey revokes an access key of account. Requests with it fail
// within 5 seconds in every process (at once in this one). Revoking a
// revoked key is a no-op.
func (s *Server) RevokeKey(ctx context.Context, account, id string) error {
	var got string
	err := s.pool.QueryRow(ctx, s.api.q.Get("revoke_key"), account, id).Scan(&got)
	s.api.keys.forget(id)
	if errors.Is(err, pgx.ErrNoRows) {
		return errorf(http.StatusNotFound, "not_found", "access key %q not found in account %s", id, account)
	}
	if err != nil {
		return fmt.Errorf("server: revoke key %s: %w", id, err)
	}
	return nil
}

// ListKeys lists the access keys of account, revoked ones included,
// oldest first.
func (s *Server) ListKeys(ctx context.Context, account string) ([]Key, error) {
	rows, err := s.pool.Query(ctx, s.api.q.Get("list_keys"), account)
	if err != nil {
		return nil, fmt.Errorf("server: list keys of account %s: %w", account, err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Key, error) {
		var k Key
		err := r.Scan(&k.ID, &k.Account, &k.Scopes, &k.Queues, &k.Description, &k.CreatedAt, &k.RevokedAt)
		k.CreatedAt = k.CreatedAt.UTC()
		if k.RevokedAt != nil {
			t := k.RevokedAt.UTC()
			k.RevokedAt = &t
		}
		return k, err
	})
	if err != nil {
		return nil, fmt.Errorf("server: list keys of account %s: %w", account, err)
	}
	return keys, nil
}

func checkKeySpec(scopes, queues []string, description string) error {
	return keys.CheckSpec(scopes, queues, description)
}

// keyRecord is what a request is authorized with.
type keyRecord struct {
	id, account    string
	hash           []byte
	scopes, queues []string
	revoked        bool
}

func (k *keyRecord) allows(scope string) bool {
	for _, s := range k.scopes {
		if s == scope || s == ScopeAllMQ && strings.HasPrefix(scope, "mq:") || s == ScopeAllKV && strings.HasPrefix(scope, "kv:") {
			return true
		}
	}
	return false
}

func (k *keyRecord) allowsQueue(queue string) bool {
	for _, p := range k.queues {
		if ok, _ := path.Match(p, queue); ok {
			return true
		}
	}
	return false
}

// keyCache remembers keys looked up, and ids not found, for a short TTL.
// The two are bounded apart, so unknown ids (which anyone can make up)
// never push out the keys in use.
type keyCache struct {
	ttl           time.Duration
	mu            sync.Mutex
	known, absent map[string]cachedKey
}

type cachedKey struct {
	rec *keyRecord // nil: no such key
	at  time.Time
}

// Bounds of the key cache: verified keys and unknown ids.
const (
	maxCachedKeys   = 10000
	maxCachedAbsent = 10000
)

func newKeyCache(ttl time.Duration) *keyCache {
	return &keyCache{ttl: ttl, known: map[string]cachedKey{}, absent: map[string]cachedKey{}}
}

func (c *keyCache) get(id string) (*keyRecord, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.known[id]
	if !ok {
		e, ok = c.absent[id]
	}
	if !ok || time.Since(e.at) > c.ttl {
		return nil, false
	}
	return e.rec, true
}

// cached reports whether id is a verified key in the cache.
func (c *keyCache) cached(id string) bool {
	rec, ok := c.get(id)
	return ok && rec != nil
}

func (c *keyCache) put(id string, rec *keyRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, max := c.known, maxCachedKeys
	if rec == nil {
		m, max = c.absent, maxCachedAbsent
		delete(c.known, id)
	} else {
		delete(c.absent, id)
	}
	if len(m) >= max {
		for k, e := range m {
			if time.Since(e.at) > c.ttl {
				delete(m, k)
			}
		}
		if len(m) >= max {
			clear(m)
		}
	}
	m[id] = cachedKey{rec: rec, at: time.Now()}
}

func (c *keyCache) forget(id string) {
	c.mu.Lock()
	delete(c.known, id)
	delete(c.absent, id)
	c.mu.Unlock()
}

// dummyHash is compared against when the key id is unknown, so unknown
// and wrong keys cost the same.
var dummyHash = sha256.Sum256([]byte("sluice: no such key"))

var errUnauthorized = errorf(http.StatusUnauthorized, "unauthorized",
	"invalid access key: it is unknown, wrong or revoked; send Authorization: Bearer <key-id>:<secret>")

// lookupKey returns the key with id (nil if none), from the cache or the
// database.
func (a *api) lookupKey(ctx context.Context, id string) (*keyRecord, error) {
	if rec, ok := a.keys.get(id); ok {
		return rec, nil
	}
	rec := &keyRecord{id: id}
	var revokedAt *time.Time
	var desc string
	var created time.Time
	a.keyQueries.Add(1)
	err := a.s.pool.QueryRow(ctx, a.q.Get("get_key"), id).Scan(&rec.account, &rec.hash, &rec.scopes, &rec.queues, &desc, &created, &revokedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		rec = nil
	} else if err != nil {
		return nil, fmt.Errorf("server: look up access key: %w", err)
	} else {
		rec.revoked = revokedAt != nil
	}
	a.keys.put(id, rec)
	return rec, nil
}

// authenticate verifies the request's access key. A client address
// with too many recent failures (see authLimiter) gets 429 without a
// database query; only keys already verified in the cache are still
// checked from it (a client sharing the address keeps working), and only
// while the key itself has failure budget left: a wrong secret for a
// known key counts against the key as well as the address, so guesses at
// a key in use are bounded too.
func (a *api) authenticate(r *http.Request) (*keyRecord, error) {
	auth := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, errorf(http.StatusUnauthorized, "unauthorized",
			"missing access key: send Authorization: Bearer <key-id>:<secret>")
	}
	id, secret, _ := strings.Cut(strings.TrimSpace(token), ":")
	client := clientAddr(r)
	if wait := a.authFails.blocked(client); wait > 0 && (!a.keys.cached(id) || a.authFails.blocked(keyFailures(id)) > 0) {
		return nil, tooManyFailures(wait)
	}
	sum := sha256.Sum256([]byte(secret))
	var rec *keyRecord
	if len(id) == 23 && strings.HasPrefix(id, "sk_") {
		var err error
		if rec, err = a.lookupKey(r.Context(), id); err != nil {
			return nil, err
		}
	}
	want := dummyHash[:]
	if rec != nil {
		want = rec.hash
	}
	match := subtle.ConstantTimeCompare(sum[:], want) == 1
	if rec == nil || !match || rec.revoked {
		if rec != nil && !match {
			a.failAuth(r.Context(), keyFailures(id))
		}
		if wait := a.failAuth(r.Context(), client); wait > 0 {
			return nil, tooManyFailures(wait)
		}
		return nil, errUnauthorized
	}
	return rec, nil
}

// failAuth records a failed authentication of subject (a client address
// or keyFailures) in this process's limiter and in the database's
// auth_failures, which every process serving the database shares, and
// returns how long subject must now wait. The local bucket takes the
// shared count when that is lower, so that a subject over its budget in
// other processes is refused here from its first failure on, without a
// query: N processes allow the budget and N failures more, not N budgets.
// When the database cannot be reached, the local count alone decides.
func (a *api) failAuth(ctx context.Context, subject string) time.Duration {
	wait := a.authFails.fail(subject)
	if a.authFails.off() {
		return wait
	}
	a.pruneAuthFailures(ctx)
	var left float64
	err := a.s.pool.QueryRow(ctx, a.q.Get("record_auth_failure"), subject,
		a.authFails.burst, a.authFails.perMinute).Scan(&left)
	if err != nil {
		a.log.Warn().Err(err).Msg("record a failed authentication in auth_failures; this process's count decides")
		return wait
	}
	return a.authFails.lower(subject, left)
}

// pruneAuthFailures deletes the auth_failures buckets that have refilled,
// at most once a minute per process.
func (a *api) pruneAuthFailures(ctx context.Context) {
	if !dueEvery(&a.nextAuthPrune, time.Minute) {
		return
	}
	full := a.authFails.burst / a.authFails.perMinute * 60 // seconds
	if _, err := a.s.pool.Exec(ctx, a.q.Get("prune_auth_failures"), full); err != nil {
		a.log.Warn().Err(err).Msg("prune auth_failures")
	}
}

// keyFailures names the authLimiter bucket of the failures with key id:
// wrong secrets for a key that exists, from any address. (An address
// never holds a space.)
func keyFailures(id string) string { return "key " + id }

func tooManyFailures(wait time.Duration) error {
	secs := int(wait.Seconds() + 0.999)
	return tooManyRequests(secs, "too many failed authentications from this address: retry in %d s", secs)
}

// clientAddr is the request's client as the failure limiter counts it:
// the peer's IPv4 address, or the /64 network of its IPv6 address (one
// host usually holds a whole /64, so counting single IPv6 addresses
// would let it pick a fresh one for every attempt). Forwarding headers
// are not trusted.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String() // also for an IPv4-mapped address
	}
	return (&net.IPNet{IP: ip.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}

// authLimiter counts authentication failures per client address (and
// per key, keyFailures) in a token bucket: burst failures at once,
// refilled at perMinute a minute. It is this process's copy of the
// buckets (failAuth brings it down to the shared count) and holds at most
// maxLimitedAddrs buckets (beyond that the ones whose budget is full are
// forgotten, then all of them).
type authLimiter struct {
	perMinute, burst float64
	mu               sync.Mutex
	m                map[string]*authBucket
}

type authBucket struct {
	tokens float64
	at     time.Time
}

const maxLimitedAddrs = 10000

func newAuthLimiter(perMinute int) *authLimiter {
	return &authLimiter{perMinute: float64(perMinute), burst: float64(perMinute), m: map[string]*authBucket{}}
}

// refill brings b up to date; call with mu held.
func (l *authLimiter) refill(b *authBucket, now time.Time) {
	b.tokens = min(l.burst, b.tokens+now.Sub(b.at).Minutes()*l.perMinute)
	b.at = now
}

// off reports whether failures are not limited at all.
func (l *authLimiter) off() bool { return l == nil || l.perMinute <= 0 }

// blocked returns how long addr must wait before its next attempt, 0 if
// it may try now.
func (l *authLimiter) blocked(addr string) time.Duration {
	if l.off() {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.m[addr]
	if !ok {
		return 0
	}
	l.refill(b, time.Now())
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) / l.perMinute * float64(time.Minute))
}

// fail records a failure of addr and returns how long it must now wait
// (0 while it has budget left).
func (l *authLimiter) fail(addr string) time.Duration {
	if l.off() {
		return 0
	}
	l.mu.Lock()
	now := time.Now()
	b, ok := l.m[addr]
	if !ok {
		if len(l.m) >= maxLimitedAddrs {
			for k, o := range l.m {
				if l.refill(o, now); o.tokens >= l.burst {
					delete(l.m, k)
				}
			}
			if len(l.m) >= maxLimitedAddrs {
				clear(l.m)
			}
		}
		b = &authBucket{tokens: l.burst, at: now}
		l.m[addr] = b
	}
	l.refill(b, now)
	b.tokens--
	left := b.tokens
	l.mu.Unlock()
	return l.wait(left)
}

// lower brings addr's budget down to tokens (a count taken from the
// shared buckets just now) if it is higher, and returns how long addr
// must now wait.
func (l *authLimiter) lower(addr string, tokens float64) time.Duration {
	l.mu.Lock()
	b, ok := l.m[addr] // fail made it; gone only if forgotten since
	if ok {
		l.refill(b, time.Now())
		b.tokens = min(b.tokens, tokens)
		tokens = b.tokens
	}
	l.mu.Unlock()
	return l.wait(tokens)
}

// wait is how long a bucket holding tokens must wait for its next
// attempt: 0 while it has budget left (a failure taken, tokens ≥ 0).
func (l *authLimiter) wait(tokens float64) time.Duration {
	if tokens >= 0 {
		return 0
	}
	return time.Duration((1 - tokens) / l.perMinute * float64(time.Minute))
}

// call is an authorized request: its key and the account it acts on.
type call struct {
	key     *keyRecord
	account string
	queue   string // data plane and queue routes; "" otherwise
}

// require checks that the key holds scope.
func (c *call) require(scope string) error {
	if c.key.allows(scope) {
		return nil
	}
	return errorf(http.StatusForbidden, "forbidden", "access key %s lacks scope %s", c.key.id, scope)
}

// authorize authenticates r and checks the URL's account, the scope and,
// when the route names a queue, the key's queue patterns and the name.
func (a *api) authorize(r *http.Request, scope string) (*call, error) {
	key, err := a.authenticate(r)
	if err != nil {
		return nil, err
	}
	c := &call{key: key, account: r.PathValue("account")}
	if c.account != key.account {
		return nil, errorf(http.StatusForbidden, "forbidden", "access key %s belongs to another account than %q", key.id, truncate(c.account, 20))
	}
	if scope == scopeReadFunctions {
		if !key.allows(ScopeAdmin) && !key.allows(ScopeDeploy) {
			return nil, errorf(http.StatusForbidden, "forbidden", "access key %s lacks scope %s or %s", key.id, ScopeAdmin, ScopeDeploy)
		}
	} else if err := c.require(scope); err != nil {
		return nil, err
	}
	if q := r.PathValue("queue"); q != "" || strings.Contains(r.Pattern, "{queue}") {
		if err := checkQueueName(q); err != nil {
			return nil, err
		}
		if !key.allowsQueue(q) {
			return nil, errorf(http.StatusForbidden, "forbidden", "access key %s is limited to queues %s", key.id, strings.Join(key.queues, ", "))
		}
		c.queue = q
	}
	return c, nil
}

func checkQueueName(q string) error {
	if !pgqueue.ValidName(q) {
		return errorf(http.StatusBadRequest, "invalid_name", "invalid queue name %q: use 1-80 characters from A-Z a-z 0-9 _ -", truncate(q, 90))
	}
	return nil
}
