// Package clienttest runs a real Sluice server for tests of code that uses
// package client: a fresh schema on the Postgres at TEST_DATABASE_URL,
// migrated, its API served by net/http/httptest, and access keys to talk
// to it. Everything is removed when the test ends.
//
//	func TestOrders(t *testing.T) {
//		t.Parallel()
//		srv := clienttest.New(t)
//		c := srv.Client(t) // every scope, the default account
//		...
//	}
package clienttest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/server"
)

// EnvVar names the environment variable holding the test database URL.
const EnvVar = "TEST_DATABASE_URL"

// AllScopes are the scopes of the key Client uses.
var AllScopes = []string{"mq:*", "functions:deploy", "functions:invoke", "kv:*"}

// Server is a running Sluice server.
type Server struct {
	// Server is the server itself, for setting up state directly.
	*server.Server
	// URL is the API's base URL.
	URL string
	// Schema holds the server's tables.
	Schema string

	databaseURL string
	http        *httptest.Server
	cacheDir    string
	tempCache   bool // cacheDir is removed at Close
}

// Options tune StartWith and NewWith.
type Options struct {
	// CompiledCacheDir keeps the WASM runtime's compiled machine code
	// (server.Config.CacheDir). "" uses a fresh folder removed at Close.
	// Tests that deploy real (Go) modules can share one folder across
	// servers and runs so that each module compiles once: compiling one
	// takes seconds, and far longer under -race.
	CompiledCacheDir string
}

// Start starts a server on a fresh schema of databaseURL. Close stops it
// and drops the schema.
func Start(ctx context.Context, databaseURL string) (*Server, error) {
	return StartWith(ctx, databaseURL, Options{})
}

// StartWith is Start with options.
func StartWith(ctx context.Context, databaseURL string, opts Options) (*Server, error) {
	if databaseURL == "" {
		return nil, fmt.Errorf("clienttest: no database URL: set %s=postgres://user@host:5432/db", EnvVar)
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	s := &Server{Schema: "test_" + hex.EncodeToString(b[:]), databaseURL: databaseURL, cacheDir: opts.CompiledCacheDir}
	var err error
	if s.cacheDir == "" {
		if s.cacheDir, err = os.MkdirTemp("", "sluice-clienttest-"); err != nil {
			return nil, err
		}
		s.tempCache = true
	}
	s.Server, err = server.Open(ctx, server.Config{
		DatabaseURL: databaseURL,
		Schema:      s.Schema,
		Migrate:     true,
		MaxConns:    4,
		CacheDir:    s.cacheDir,
		Logger:      zerolog.Nop(),
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("clienttest: open the server: %w", err), s.drop())
	}
	if err := s.Server.Start(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("clienttest: start the server: %w", err), s.Server.Stop(ctx), s.drop())
	}
	s.http = httptest.NewServer(s.Handler())
	s.URL = s.http.URL
	return s, nil
}

// Close stops the server and drops its schema.
func (s *Server) Close() error {
	s.http.Close()
	return errors.Join(s.Server.Stop(context.Background()), s.drop())
}

func (s *Server) drop() error {
	if s.tempCache {
		defer os.RemoveAll(s.cacheDir)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.databaseURL)
	if err != nil {
		return fmt.Errorf("clienttest: drop schema %s: %w", s.Schema, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{s.Schema}.Sanitize()+" CASCADE"); err != nil {
		return fmt.Errorf("clienttest: drop schema %s: %w", s.Schema, err)
	}
	return nil
}

// New starts a server on a fresh schema of TEST_DATABASE_URL and closes it
// when the test ends. It fails the test when TEST_DATABASE_URL is unset.
func New(t testing.TB) *Server {
	t.Helper()
	return NewWith(t, Options{})
}

// NewShared is New with the compilation cache every test server on the
// machine shares (wasmbuild.CompiledCacheDir), as the servers of one host
// would: a deployed Go module compiles once per machine, not once per test.
func NewShared(t testing.TB) *Server {
	t.Helper()
	dir, err := wasmbuild.CompiledCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	return NewWith(t, Options{CompiledCacheDir: dir})
}

// NewWith is New with options.
func NewWith(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := StartWith(context.Background(), os.Getenv(EnvVar), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("clienttest: %v", err)
		}
	})
	return s
}

// Key creates an access key of account with scopes, limited to the
// queue-name patterns queues (nil: every queue), and returns it as
// ID:SECRET.
func (s *Server) Key(t testing.TB, account string, scopes, queues []string) string {
	t.Helper()
	id, secret, err := s.CreateKey(context.Background(), account, scopes, queues, t.Name())
	if err != nil {
		t.Fatalf("clienttest: create a key: %v", err)
	}
	return id + ":" + secret
}

// Client returns a client of DefaultAccount whose key has every scope.
func (s *Server) Client(t testing.TB, opts ...client.Option) *client.Client {
	t.Helper()
	return s.ClientFor(t, client.DefaultAccount, AllScopes, nil, opts...)
}

// ClientFor returns a client of account whose key has scopes and the
// queue-name patterns queues (nil: every queue).
func (s *Server) ClientFor(t testing.TB, account string, scopes, queues []string, opts ...client.Option) *client.Client {
	t.Helper()
	cfg := client.Config{Endpoint: s.URL, Key: s.Key(t, account, scopes, queues), Account: account}
	c, err := cfg.Client(opts...)
	if err != nil {
		t.Fatalf("clienttest: %v", err)
	}
	return c
}
