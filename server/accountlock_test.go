package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
)

// TestConcurrentCreatesStayWithinLimits: creates racing each other, half
// through one server process and half through another on the same
// database, never pass an account's limits: of 12 creates of distinct
// queues, topics, hooks, triggers, keys or functions, exactly as many as
// the limit leaves succeed and the others are refused with 403
// limit_exceeded. (Deploys may also be turned away with 429 while others
// compile; those create nothing either.)
func TestConcurrentCreatesStayWithinLimits(t *testing.T) {
	t.Parallel()
	limits := AccountLimits{Queues: 4, Topics: 3, Hooks: 3, Triggers: 3, Keys: 3, Functions: 2}
	e := newEnvWith(t, func(c *Config) { c.Limits = limits })
	other := secondProcess(t, e).ts
	acct, tok := e.admin("")
	v := "/v1/accounts/" + acct
	e.do(tok, "POST", v+"/queues", `{"name":"q"}`).expect(201)
	e.deploy(tok, acct, "f", "", wasmbuild.Handwritten("trap")).expect(201)
	trap := wasmbuild.Handwritten("trap")

	const tries = 12
	cases := []struct {
		what    string
		allowed int // what the limit leaves after the setup above
		request func(i int) *http.Request
	}{
		{"queues", limits.Queues - 1, func(i int) *http.Request {
			return jsonRequest("POST", v+"/queues", fmt.Sprintf(`{"name":"q%d"}`, i))
		}},
		{"topics", limits.Topics, func(i int) *http.Request {
			return jsonRequest("POST", v+"/topics", fmt.Sprintf(`{"name":"t%d"}`, i))
		}},
		{"hooks", limits.Hooks, func(i int) *http.Request {
			return jsonRequest("POST", v+"/hooks", fmt.Sprintf(`{"name":"h%d","queue":"q","verify":"none"}`, i))
		}},
		{"triggers", limits.Triggers, func(i int) *http.Request {
			return jsonRequest("PUT", fmt.Sprintf("%s/triggers/t%d", v, i), `{"kind":"queue","queue":"q","function":"f","enabled":false}`)
		}},
		{"keys", limits.Keys - 1, func(int) *http.Request { // the admin key is one
			return jsonRequest("POST", v+"/keys", `{"scopes":["mq:send"]}`)
		}},
		{"functions", limits.Functions - 1, func(i int) *http.Request {
			r, _ := http.NewRequest("POST", fmt.Sprintf("%s/functions/g%d/versions", v, i), bytes.NewReader(trap))
			r.Header.Set("Content-Type", "application/wasm")
			return r
		}},
	}
	for _, c := range cases {
		statuses := make([]int, tries)
		var wg sync.WaitGroup
		for i := range tries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				base := e.ts
				if i%2 == 1 {
					base = other
				}
				statuses[i] = sendTo(base, tok, c.request(i))
			}()
		}
		wg.Wait()
		created, refused := 0, 0
		for _, s := range statuses {
			switch s {
			case 200, 201:
				created++
			case 403:
				refused++
			case 429:
				if c.what != "functions" {
					t.Errorf("%s: status 429 among %v", c.what, statuses)
				}
				refused++
			default:
				t.Errorf("%s: status %d among %v", c.what, s, statuses)
			}
		}
		if created != c.allowed || refused != tries-c.allowed {
			t.Errorf("%s: %d created and %d refused of %d (statuses %v), want %d created", c.what, created, refused, tries, statuses, c.allowed)
		}
	}
}

// TestChangesWaitForTheAccountLock: every change whose check reads what
// another change may write (a limit's count, the queue of an existing
// trigger or hook) runs under the account's change lock: while a
// transaction holds it, each waits, then completes once it is released.
func TestChangesWaitForTheAccountLock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("")
	v := "/v1/accounts/" + acct
	e.do(tok, "POST", v+"/queues", `{"name":"q"}`).expect(201)
	e.deploy(tok, acct, "f", "", wasmbuild.Handwritten("trap")).expect(201)
	e.do(tok, "PUT", v+"/triggers/t", `{"kind":"queue","queue":"q","function":"f","enabled":false}`).expect(200)
	e.do(tok, "POST", v+"/hooks", `{"name":"h","queue":"q","verify":"none"}`).expect(201)
	changes := []struct {
		name string
		req  func() *http.Request
		want int
	}{
		{"create queue", func() *http.Request { return jsonRequest("POST", v+"/queues", `{"name":"q2"}`) }, 201},
		{"create topic", func() *http.Request { return jsonRequest("POST", v+"/topics", `{"name":"tp"}`) }, 201},
		{"create key", func() *http.Request { return jsonRequest("POST", v+"/keys", `{"scopes":["mq:send"]}`) }, 201},
		{"replace hook", func() *http.Request {
			return jsonRequest("POST", v+"/hooks", `{"name":"h","queue":"q2","verify":"none"}`)
		}, 200},
		{"replace trigger", func() *http.Request {
			return jsonRequest("PUT", v+"/triggers/t", `{"kind":"queue","queue":"q2","function":"f","enabled":false}`)
		}, 200},
		{"enable trigger", func() *http.Request { return jsonRequest("POST", v+"/triggers/t/enable", "") }, 200},
		{"delete trigger", func() *http.Request { return jsonRequest("DELETE", v+"/triggers/t", "") }, 204},
		{"delete hook", func() *http.Request { return jsonRequest("DELETE", v+"/hooks/h", "") }, 204},
	}
	ctx := context.Background()
	for _, c := range changes {
		tx, err := e.srv.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var pid uint32
		if err := tx.QueryRow(ctx, `SELECT pg_backend_pid() FROM (SELECT pg_advisory_xact_lock(hashtextextended($1, 0))) l`,
			e.srv.cfg.Schema+"/"+acct).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		status := make(chan int, 1)
		done := make(chan error, 1)
		go func() {
			s := sendTo(e.ts, tok, c.req())
			status <- s
			done <- fmt.Errorf("status %d", s)
		}()
		pgtest.WaitBlockedBy(t, e.srv.pool, pid, done)
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if s := <-status; s != c.want {
			t.Errorf("%s: status %d after the lock was released, want %d", c.name, s, c.want)
		}
	}
}

// secondProcess starts another Server on e's schema, with e's limits
// (another process on the same database, as far as the API's locks and
// the bounds it shares go), stopped at cleanup.
func secondProcess(t *testing.T, e *env) *env {
	t.Helper()
	return serveTest(t, Config{DatabaseURL: os.Getenv(pgtest.EnvVar), Schema: e.srv.cfg.Schema, MaxConns: 4,
		CacheDir: compiledCache(t), Logger: zerolog.Nop(), Limits: e.srv.cfg.Limits,
		AuthFailuresPerMinute: e.srv.cfg.AuthFailuresPerMinute})
}

// jsonRequest is a request with a JSON body to path, for sendTo.
func jsonRequest(method, path, body string) *http.Request {
	r, err := http.NewRequest(method, path, bytes.NewReader([]byte(body)))
	if err != nil {
		panic(err)
	}
	r.Header.Set("Content-Type", "application/json")
	return r
}

// sendTo sends req (its URL a path) to ts with token and returns the
// status, 0 when the request failed; it may run on any goroutine.
func sendTo(ts *httptest.Server, token string, req *http.Request) int {
	u := ts.URL + req.URL.String()
	var err error
	if req.URL, err = req.URL.Parse(u); err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := ts.Client().Do(req)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}
