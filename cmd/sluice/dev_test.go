package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/client/clienttest"
	"github.com/sluicehq/sluice/internal/localpg"
)

// syncBuffer is a bytes.Buffer safe to write from one goroutine while
// another reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startDev runs `sluice dev` in-process until it is ready (it printed
// "Ctrl-C stops it.") and returns its output, and a stop function that
// cancels it and returns its error.
func startDev(t *testing.T, args ...string) (*syncBuffer, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	errOut := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- runDev(ctx, args, out, errOut) }()
	// No deadline of its own: it takes what starting Postgres, migrating
	// and deploying take on this machine (the test's -timeout bounds it).
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(out.String(), "Ctrl-C stops it.") {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("sluice dev ended before it was ready: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
		case <-tick.C:
		}
	}
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return out, stop
}

// pgUp reports whether the local cluster in dir accepts connections.
func pgUp(t *testing.T, dir string) bool {
	t.Helper()
	c, err := localpg.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(context.Background(), c.URL())
	if err != nil {
		return false
	}
	conn.Close(context.Background())
	return true
}

// shellFields splits a hint the way sh would, for its simple quoting
// (single-quoted strings).
func shellFields(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, started := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, started = !quoted, true
		case r == ' ' && !quoted:
			if started {
				out = append(out, cur.String())
			}
			cur.Reset()
			started = false
		default:
			cur.WriteRune(r)
			started = true
		}
	}
	if started {
		out = append(out, cur.String())
	}
	return out
}

// One `sluice dev` per folder: a second one is refused, naming the first
// one's pid and address, and the first one's Postgres stays up; the
// first one deploys the manifest given with -f (not the examples) and its
// CLI hints work as typed; a Postgres that dev did not start is left
// running when dev stops, one it started is stopped.
func TestDevLock(t *testing.T) {
	// Not parallel: it sets DATABASE_URL and XDG_CONFIG_HOME.
	t.Setenv("DATABASE_URL", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	parent, err := os.MkdirTemp("", "sluice-dev-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil { // the server may run as user postgres
		t.Fatal(err)
	}
	pgDir := filepath.Join(parent, "pg")
	manifest := filepath.Join(parent, "sluice.yaml")
	if err := os.WriteFile(manifest, []byte("app: devtest\nqueues:\n  jobs: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-f", manifest, "--postgres-dir", pgDir, "--addr", "127.0.0.1:0", "--log-level", "warn"}
	out, stop := startDev(t, args...)
	t.Cleanup(func() {
		if c, err := localpg.Open(pgDir); err == nil {
			_ = c.Stop(context.Background())
		}
	})
	first := out.String()
	if strings.Contains(first, "example") || !strings.Contains(first, "+ queue jobs (create)") || !strings.Contains(first, "app devtest") {
		t.Errorf("dev output: want the manifest's plan and no examples:\n%s", first)
	}

	var second bytes.Buffer
	err = runDev(context.Background(), args, &second, &second)
	if err == nil || !strings.Contains(err.Error(), "held by sluice dev (pid ") || !strings.Contains(err.Error(), "http://127.0.0.1:") ||
		!strings.Contains(err.Error(), "--postgres-dir") {
		t.Errorf("second sluice dev in the folder: %v; want a refusal naming the first one's pid and address", err)
	}
	if !pgUp(t, pgDir) {
		t.Fatal("the second sluice dev stopped the first one's Postgres")
	}

	// Every CLI hint works as typed.
	self := selfCommand()
	hints := 0
	for _, line := range strings.Split(first, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, self+" ") {
			continue
		}
		hints++
		fields := shellFields(strings.TrimPrefix(line, self+" "))
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), fields, &stdout, &stderr); code != 0 {
			t.Errorf("hint %q: exit %d: %s", line, code, stderr.String())
		}
	}
	if hints < 4 || !strings.Contains(first, "mq send jobs") || !strings.Contains(first, "health --addr") {
		t.Errorf("%d CLI hints in:\n%s\nwant mq send jobs, queues list, invocations, apps show and health", hints, first)
	}

	if err := stop(); err != nil {
		t.Fatalf("first sluice dev: %v", err)
	}
	if pgUp(t, pgDir) {
		t.Error("sluice dev left the Postgres it started running")
	}

	// A Postgres started by someone else (sluice postgres start) is left up.
	c, err := localpg.Start(context.Background(), pgDir, localpg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, stop = startDev(t, args...)
	if err := stop(); err != nil {
		t.Fatalf("sluice dev over a running Postgres: %v", err)
	}
	if !pgUp(t, pgDir) {
		t.Error("sluice dev stopped a Postgres it did not start")
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// sluice health exits 0 when /readyz answers 200 and 1 when the server is
// unreachable or not ready.
func TestHealth(t *testing.T) {
	t.Parallel()
	srv := clienttest.New(t)
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"health", "--addr", srv.URL}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "ready") {
		t.Errorf("health of a running server: exit %d, %q %q", code, out.String(), errOut.String())
	}
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"status":"unavailable"}`))
	}))
	defer down.Close()
	addr := strings.TrimPrefix(down.URL, "http://")
	errOut.Reset()
	if code := run(context.Background(), []string{"health", "--addr", addr}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "503") {
		t.Errorf("health of a server without its database: exit %d, %q; want 1 and the 503", code, errOut.String())
	}
	down.Close()
	errOut.Reset()
	if code := run(context.Background(), []string{"health", "--addr", down.URL}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "not reachable") {
		t.Errorf("health of a stopped server: exit %d, %q; want 1", code, errOut.String())
	}
}
