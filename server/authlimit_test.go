package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/keys"
)

// TestUnknownKeyIDsKeepValidKeysCached: unknown ids, which anyone can
// make up, are cached apart from verified keys, so 10,000 of them do not
// push a verified key out of the cache (and back onto the database).
func TestUnknownKeyIDsKeepValidKeysCached(t *testing.T) {
	t.Parallel()
	c := newKeyCache(time.Minute)
	c.put("sk_valid", &keyRecord{id: "sk_valid"})
	for i := range maxCachedAbsent + 10 {
		c.put(fmt.Sprintf("sk_unknown%d", i), nil)
	}
	if !c.cached("sk_valid") {
		t.Fatal("10,010 unknown ids flushed the verified key from the cache")
	}
	c.mu.Lock()
	n := len(c.known) + len(c.absent)
	c.mu.Unlock()
	if n > maxCachedKeys+maxCachedAbsent {
		t.Fatalf("cache holds %d entries", n)
	}
}

// TestAuthFailuresRateLimited: random key ids from one address cost a
// database query each only up to the address's failure budget; then the
// address gets 429 with Retry-After without a query, while a key already
// verified keeps working from it.
func TestAuthFailuresRateLimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("q")
	e.do(tok, "GET", "/"+acct+"/q/messages", "").expect(200) // cached now
	budget := e.srv.cfg.AuthFailuresPerMinute
	before := e.srv.api.keyQueries.Load()
	var limited *response
	for i := range 3 * budget {
		res := e.do(randomKeyID()+":secret", "GET", "/"+acct+"/q/messages", "")
		if res.status == 429 {
			limited = res
			break
		}
		if res.status != 401 || i >= budget {
			t.Fatalf("attempt %d: status %d (budget %d)", i, res.status, budget)
		}
	}
	if limited == nil {
		t.Fatalf("%d unknown ids from one address: never 429", 3*budget)
	}
	limited.expectError(429, "too_many_requests")
	if ra, err := strconv.Atoi(limited.header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
		t.Fatalf("Retry-After %q", limited.header.Get("Retry-After"))
	}
	for range 100 {
		e.do(randomKeyID()+":secret", "GET", "/"+acct+"/q/messages", "").expectError(429, "too_many_requests")
	}
	if q := e.srv.api.keyQueries.Load() - before; q > int64(budget) {
		t.Fatalf("%d key queries for %d failures allowed", q, budget)
	}
	e.do(tok, "GET", "/"+acct+"/q/messages", "").expect(200)
}

// TestWrongSecretsForAKeyInUseAreLimited: from an address over its
// budget a key verified moments ago is still checked, so that a client
// sharing the address keeps working, but wrong secrets for it count
// against the key too: once the key's budget is spent, the address gets
// 429 for that key whatever the secret, while other addresses, within
// their budget, still use the key.
func TestWrongSecretsForAKeyInUseAreLimited(t *testing.T) {
	t.Parallel()
	// A budget of 3 refills one failure every 20 s: nothing in this test
	// waits that long.
	const budget = 3
	e := newEnvWith(t, func(c *Config) { c.AuthFailuresPerMinute = budget })
	acct, tok := e.admin("q")
	path := "/" + acct + "/q/messages"
	e.do(tok, "GET", path, "").expect(200) // cached now
	id, _, _ := strings.Cut(tok, ":")
	for range budget {
		e.do(randomKeyID()+":secret", "GET", path, "").expect(401)
	}
	e.do(randomKeyID()+":secret", "GET", path, "").expectError(429, "too_many_requests")
	e.do(tok, "GET", path, "").expect(200) // the address is over, the key is not
	for i := range 2 * budget {
		e.do(id+":wrong", "GET", path, "").expectError(429, "too_many_requests")
		if i+1 == budget && e.srv.api.authFails.blocked(keyFailures(id)) == 0 {
			t.Fatalf("%d wrong secrets for key %s: the key has budget left", budget, id)
		}
	}
	e.do(tok, "GET", path, "").expectError(429, "too_many_requests")

	// Another address, within its budget, is not held back by the key's.
	other := func(token string) error {
		req := httptest.NewRequest("GET", path, nil)
		req.RemoteAddr = "192.0.2.7:40000"
		req.Header.Set("Authorization", "Bearer "+token)
		_, err := e.srv.api.authenticate(req)
		return err
	}
	if err := other(tok); err != nil {
		t.Fatalf("the key from another address: %v", err)
	}
	if err := other(id + ":wrong"); err != errUnauthorized {
		t.Fatalf("a wrong secret from another address: %v, want 401", err)
	}
}

// TestAuthFailuresSharedByProcesses: two processes serving one database
// share an address's failure budget (auth_failures), so that a second
// process refuses an address the first has seen fail its budget from the
// address's first failure there, and wrong secrets for a key count in
// every process alike. Each process still answers 429 without a query once
// it knows.
func TestAuthFailuresSharedByProcesses(t *testing.T) {
	t.Parallel()
	const budget = 3 // refills one failure every 20 s: nothing here waits that long
	e := newEnvWith(t, func(c *Config) { c.AuthFailuresPerMinute = budget })
	acct, tok := e.admin("q")
	path := "/" + acct + "/q/messages"
	other := secondProcess(t, e)

	for range budget {
		e.do(randomKeyID()+":secret", "GET", path, "").expect(401)
	}
	e.do(randomKeyID()+":secret", "GET", path, "").expectError(429, "too_many_requests")
	// The other process has not seen the address yet: its first failure
	// there takes the shared count, which is spent.
	before := other.srv.api.keyQueries.Load()
	other.do(randomKeyID()+":secret", "GET", path, "").expectError(429, "too_many_requests")
	for range 10 {
		other.do(randomKeyID()+":secret", "GET", path, "").expectError(429, "too_many_requests")
	}
	if q := other.srv.api.keyQueries.Load() - before; q != 1 {
		t.Fatalf("the second process queried %d keys for an address over its shared budget, want 1", q)
	}
	var left float64
	if err := e.srv.pool.QueryRow(context.Background(),
		`SELECT tokens FROM `+e.srv.cfg.Schema+`.auth_failures WHERE subject = '127.0.0.1'`).Scan(&left); err != nil {
		t.Fatalf("the address's shared bucket: %v", err)
	}
	// Four failures were counted (three in the first process, one in the
	// second); requests refused with 429 count none.
	if left >= 0 || left < -1 {
		t.Fatalf("the address's shared bucket holds %.2f tokens after 4 failures on a budget of %d, want about -1", left, budget)
	}

	// Wrong secrets for a key count against the key in every process
	// alike (each from an address of its own, within its budget): after
	// two in the first process and one in the second, the second holds
	// the key over its budget.
	id, _, _ := strings.Cut(tok, ":")
	for i, srv := range []*Server{e.srv, e.srv, other.srv} {
		req := httptest.NewRequest("GET", path, nil)
		req.RemoteAddr = fmt.Sprintf("192.0.2.%d:40000", i+1)
		req.Header.Set("Authorization", "Bearer "+id+":wrong")
		if _, err := srv.api.authenticate(req); err != errUnauthorized {
			t.Fatalf("wrong secret %d: %v, want 401", i+1, err)
		}
	}
	if other.srv.api.authFails.blocked(keyFailures(id)) == 0 {
		t.Fatalf("%d wrong secrets for key %s over two processes: the second still gives it budget", budget, id)
	}

	// Buckets untouched for as long as a refill takes are deleted.
	ctx := context.Background()
	if _, err := e.srv.pool.Exec(ctx, e.srv.api.q.Get("prune_auth_failures"), 0); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := e.srv.pool.QueryRow(ctx, `SELECT count(*) FROM `+e.srv.cfg.Schema+`.auth_failures`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("auth_failures holds %d rows after a prune of every bucket (%v)", n, err)
	}
}

// TestClientAddrGroupsIPv6By64: failures count per IPv4 address and per
// IPv6 /64, so a host cannot take a fresh address of its /64 for each
// attempt.
func TestClientAddrGroupsIPv6By64(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ remote, want string }{
		{"192.0.2.7:40000", "192.0.2.7"},
		{"[2001:db8:1:2::7]:40000", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff:1:2:3]:1", "2001:db8:1:2::/64"},
		{"[2001:db8:1:3::7]:40000", "2001:db8:1:3::/64"},
		{"[::ffff:192.0.2.7]:40000", "192.0.2.7"},
		{"[::1]:40000", "::/64"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		if got := clientAddr(r); got != c.want {
			t.Errorf("clientAddr(%s) = %q, want %q", c.remote, got, c.want)
		}
	}
}

func randomKeyID() string {
	b := make([]byte, 20)
	for i := range b {
		b[i] = keys.IDAlphabet[rand.IntN(len(keys.IDAlphabet))]
	}
	return "sk_" + string(b)
}
