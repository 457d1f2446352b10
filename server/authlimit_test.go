package server

import (
	"fmt"
	"math/rand/v2"
	"strconv"
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

func randomKeyID() string {
	b := make([]byte, 20)
	for i := range b {
		b[i] = keys.IDAlphabet[rand.IntN(len(keys.IDAlphabet))]
	}
	return "sk_" + string(b)
}
