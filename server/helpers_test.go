package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/wire"
)

// env is one test's server: a fresh schema, a started Server over it and
// an httptest server in front of its Handler.
type env struct {
	t   testing.TB
	srv *Server
	ts  *httptest.Server
}

// compiledCache is the compilation cache every test server shares (as
// the servers of one host would): each module compiles once per machine,
// not once per test.
func compiledCache(tb testing.TB) string {
	tb.Helper()
	dir, err := wasmbuild.CompiledCacheDir()
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}

// startListening opens a Server on a fresh schema with its own HTTP
// listener on a free local port, starts it and stops it at cleanup.
func startListening(tb testing.TB, maxConns int32) *Server {
	tb.Helper()
	_, schema := pgtest.Schema(tb)
	ctx := context.Background()
	srv, err := Open(ctx, Config{DatabaseURL: os.Getenv(pgtest.EnvVar), Schema: schema, Migrate: true,
		MaxConns: maxConns, CacheDir: compiledCache(tb), Logger: zerolog.Nop(), HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		tb.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = srv.Stop(context.Background()) })
	return srv
}

// newEnv serves the API on a fresh schema for one test, with the shared
// compilation cache.
func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvWith(t, func(*Config) {})
}

// newEnvWith is newEnv with the configuration changed by edit.
func newEnvWith(t testing.TB, edit func(*Config)) *env {
	t.Helper()
	_, schema := pgtest.Schema(t) // a fresh schema name, dropped at cleanup
	cfg := Config{DatabaseURL: os.Getenv(pgtest.EnvVar), Schema: schema, Migrate: true,
		MaxConns: 4, CacheDir: compiledCache(t), Logger: zerolog.Nop()}
	edit(&cfg)
	return serveTest(t, cfg)
}

// serveTest opens and starts a Server with cfg behind an httptest server,
// both stopped at cleanup.
func serveTest(t testing.TB, cfg Config) *env {
	t.Helper()
	ctx := context.Background()
	srv, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open server: %v", err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatalf("start server: %v", err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		if err := srv.Stop(context.Background()); err != nil {
			t.Errorf("stop server: %v", err)
		}
	})
	return &env{t: t, srv: srv, ts: ts}
}

// newAccount returns a fresh random account number.
func newAccount() string {
	return fmt.Sprintf("%012d", rand.Int64N(1e12))
}

// key creates a key in account and returns its bearer token.
func (e *env) key(account string, scopes []string, queues ...string) string {
	e.t.Helper()
	id, secret, err := e.srv.CreateKey(context.Background(), account, scopes, queues, "test")
	if err != nil {
		e.t.Fatalf("create key: %v", err)
	}
	return id + ":" + secret
}

// admin returns a fresh account with a queue named queue (if not "") and an
// all-scopes key for it.
func (e *env) admin(queue string) (account, token string) {
	e.t.Helper()
	account = newAccount()
	token = e.key(account, []string{ScopeAllMQ, ScopeDeploy})
	if queue != "" {
		e.do(token, "POST", "/v1/accounts/"+account+"/queues", fmt.Sprintf(`{"name":%q}`, queue)).expect(201)
	}
	return account, token
}

type response struct {
	t      testing.TB
	status int
	header http.Header
	body   []byte
}

// do sends a request with a JSON body (if body is not "").
func (e *env) do(token, method, path, body string) *response {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return e.send(token, req)
}

func (e *env) send(token string, req *http.Request) *response {
	e.t.Helper()
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return &response{t: e.t, status: res.StatusCode, header: res.Header, body: b}
}

// expect fails the test unless the status is want.
func (r *response) expect(want int) *response {
	r.t.Helper()
	if r.status != want {
		r.t.Fatalf("status %d, want %d; body %s", r.status, want, r.body)
	}
	return r
}

// expectError checks the status and error code and that the message is
// not empty; it returns the message.
func (r *response) expectError(status int, code string) string {
	r.t.Helper()
	r.expect(status)
	var e struct {
		Error wire.ErrorBody `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil {
		r.t.Fatalf("error body %s: %v", r.body, err)
	}
	if e.Error.Code != code || e.Error.Message == "" {
		r.t.Fatalf("error %+v, want code %s with a message", e.Error, code)
	}
	return e.Error.Message
}

// decode unmarshals the body into v.
func (r *response) decode(v any) {
	r.t.Helper()
	dec := json.NewDecoder(bytes.NewReader(r.body))
	if err := dec.Decode(v); err != nil {
		r.t.Fatalf("decode %s: %v", r.body, err)
	}
}

// messages decodes a {"messages": [...]} response.
func (r *response) messages() []wire.Message {
	r.t.Helper()
	var out struct {
		Messages []wire.Message `json:"messages"`
	}
	r.decode(&out)
	return out.Messages
}
