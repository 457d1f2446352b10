package reliability

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/deploy"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/internal/localpg"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/server"
)

// EnvVar selects the suite's sizes: "full" runs the sizes (make
// reliability); anything else runs the short CI version.
const EnvVar = "SLUICE_RELIABILITY"

// Full reports whether the full-size suite was asked for.
func Full() bool { return os.Getenv(EnvVar) == "full" }

// Size returns short in the short suite and full in the full one.
func Size[T any](short, full T) T {
	if Full() {
		return full
	}
	return short
}

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// Binary builds bin/sluice from this repository once per test binary and
// returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		root, err := wasmbuild.Root()
		if err != nil {
			binErr = err
			return
		}
		if binDir, binErr = os.MkdirTemp("", "sluice-reliability-bin-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "sluice")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/sluice")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/sluice: %w: %s", err, out)
		}
	})
	if binErr != nil {
		t.Fatalf("reliability: %v", binErr)
	}
	return binPath
}

// Cleanup removes what the package made for the whole test binary; call it
// from TestMain.
func Cleanup() {
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
}

// Env is one scenario's world: a fresh schema holding a deployed manifest,
// a folder of logs, and the serve processes started on it.
type Env struct {
	t testing.TB
	// URL is the DATABASE_URL the serve processes use.
	URL string
	// Schema is the scenario's own schema.
	Schema string
	// Dir holds the serve processes' logs.
	Dir string
	// Pool is the test's own pool on URL.
	Pool *pgxpool.Pool
	// Queue is a queue client on Pool.
	Queue *pgqueue.Client
	// Server is opened on the schema but not started: Apply, CreateKey,
	// Triggers.
	Server *server.Server

	mu    sync.Mutex
	nodes []*Node
	kills map[string]time.Time // log file -> when its process was killed
}

// EnvOptions tune NewEnv.
type EnvOptions struct {
	// URL is the database to use; "" means TEST_DATABASE_URL.
	URL string
}

// NewEnv makes a fresh schema on the database, applies the manifest (YAML;
// build paths relative to examples/) and returns the scenario's world.
// Everything is torn down when the test ends.
func NewEnv(t testing.TB, manifestYAML string, opts EnvOptions) *Env {
	t.Helper()
	ctx := context.Background()
	url := opts.URL
	if url == "" {
		if url = os.Getenv("TEST_DATABASE_URL"); url == "" {
			t.Fatalf("reliability: TEST_DATABASE_URL is not set: the suite needs a real Postgres (make test starts one)")
		}
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	dir, err := os.MkdirTemp("", "sluice-reliability-logs-")
	if err != nil {
		t.Fatal(err)
	}
	// The logs stay when the scenario failed, to read what happened.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reliability: the serve processes' logs are kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	e := &Env{t: t, URL: url, Schema: "rel_" + hex.EncodeToString(b[:]), Dir: dir, kills: map[string]time.Time{}}
	pcfg, err := pgxpool.ParseConfig(withAppName(url))
	if err != nil {
		t.Fatalf("reliability: database URL: %v", err)
	}
	pcfg.MaxConns = 8
	if e.Pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		t.Fatalf("reliability: connect: %v", err)
	}
	t.Cleanup(func() {
		if _, err := e.Pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{e.Schema}.Sanitize()+" CASCADE"); err != nil {
			t.Logf("reliability: drop schema %s: %v", e.Schema, err)
		}
		e.Pool.Close()
	})
	e.Server, err = server.Open(ctx, server.Config{DatabaseURL: withAppName(url), Schema: e.Schema, Migrate: true, MaxConns: 4, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatalf("reliability: open server on schema %s: %v", e.Schema, err)
	}
	t.Cleanup(func() { _ = e.Server.Stop(context.Background()) })
	if e.Queue, err = pgqueue.New(e.Pool, pgqueue.Options{Schema: e.Schema}); err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse([]byte(manifestYAML))
	if err != nil {
		t.Fatalf("reliability: manifest: %v", err)
	}
	root, err := wasmbuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	m.Dir = filepath.Join(root, "examples")
	actx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if _, err := e.Server.Apply(actx, pgqueue.DefaultAccount, m, deploy.ManifestModules(m, wasmbuild.BuildDir, wasmbuild.RunCommand), deploy.Options{}); err != nil {
		t.Fatalf("reliability: apply manifest: %v", err)
	}
	// Registered last, so it runs first: no process outlives its schema.
	t.Cleanup(e.stopAll)
	return e
}

// AppName is the application_name of the test's own connections, so
// ServeConns can tell them from the serve processes'.
const AppName = "sluice-reliability"

func withAppName(url string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "application_name=" + AppName
}

// Int runs sql, a query of one integer in which {{schema}} stands for the
// scenario's schema, and returns its value; a failed query fails t.
func (e *Env) Int(t testing.TB, sql string) int64 {
	t.Helper()
	var v int64
	if err := e.Pool.QueryRow(context.Background(), strings.ReplaceAll(sql, "{{schema}}", pgx.Identifier{e.Schema}.Sanitize())).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// ServeConns counts the database's client connections that are not the
// test's own (those of the serve processes).
func (e *Env) ServeConns(ctx context.Context) (int, error) {
	var n int
	err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE backend_type = 'client backend' AND datname = current_database()
		AND application_name <> $1`, AppName).Scan(&n)
	return n, err
}

// PrivateCluster starts a private Postgres cluster in a folder under /tmp
// for one test, stopped and removed when it ends; durable keeps fsync and
// synchronous commit on (needed to survive a crash). Restart it at will: no
// one else uses it.
func PrivateCluster(t testing.TB, durable bool) *localpg.Cluster {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "sluice-reliability-pg-")
	if err != nil {
		t.Fatal(err)
	}
	// The server runs as the postgres user when we are root: let it in.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := localpg.Start(context.Background(), filepath.Join(dir, "pg"), localpg.Options{Durable: durable})
	if err != nil {
		os.RemoveAll(dir)
		t.Fatalf("reliability: private Postgres: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Logf("reliability: stop private Postgres: %v", err)
		}
		os.RemoveAll(dir)
	})
	return c
}

// Node is one `sluice serve` process (one incarnation: a restart is a new
// Node with the same name).
type Node struct {
	// Name names the node; Log is the file its stderr (JSON logs) goes to.
	Name, Log string
	// Addr is the HTTP API's address.
	Addr string
	// Started is when the process was started.
	Started time.Time

	env    *Env
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // the process's exit, once exited is closed
}

// StartNode starts `sluice serve` on the scenario's schema with extra
// flags, logging JSON at debug level to a file of its own, and returns
// once its HTTP API listens.
func (e *Env) StartNode(name string, flags ...string) *Node {
	e.t.Helper()
	e.mu.Lock()
	n := &Node{Name: name, env: e, exited: make(chan struct{}),
		Log: filepath.Join(e.Dir, fmt.Sprintf("%s.%d.log", name, len(e.nodes)))}
	e.nodes = append(e.nodes, n)
	e.mu.Unlock()
	f, err := os.Create(n.Log)
	if err != nil {
		e.t.Fatal(err)
	}
	args := append([]string{"serve", "--schema", e.Schema, "--addr", "127.0.0.1:0",
		"--log-level", "debug", "--log-format", "json", "--max-conns", "6"}, flags...)
	n.cmd = exec.Command(Binary(e.t), args...)
	n.cmd.Env = append(os.Environ(), "DATABASE_URL="+e.URL)
	// The log file is written unbuffered by the process itself, so what
	// was logged survives a SIGKILL.
	n.cmd.Stdout, n.cmd.Stderr = f, f
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	n.Started = time.Now()
	if err := n.cmd.Start(); err != nil {
		f.Close()
		e.t.Fatalf("reliability: start node %s: %v", name, err)
	}
	f.Close()
	go func() {
		n.err = n.cmd.Wait()
		close(n.exited)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for n.Addr == "" {
		select {
		case <-n.exited:
			log, _ := os.ReadFile(n.Log)
			e.t.Fatalf("reliability: node %s exited at start (%v):\n%s", name, n.err, log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			n.Kill()
			e.t.Fatalf("reliability: node %s: no HTTP address logged within 60s", name)
		}
		n.Addr = listeningAddr(n.Log)
	}
	return n
}

// listeningAddr finds the "http api listening" line of a log file.
func listeningAddr(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `"http api listening"`) {
			continue
		}
		const key = `"addr":"`
		if i := strings.Index(line, key); i >= 0 {
			rest := line[i+len(key):]
			if j := strings.IndexByte(rest, '"'); j > 0 {
				return rest[:j]
			}
		}
	}
	return ""
}

// Pid is the process id.
func (n *Node) Pid() int { return n.cmd.Process.Pid }

// Alive reports whether the process still runs.
func (n *Node) Alive() bool {
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL and waits for the process to be gone, noting when.
func (n *Node) Kill() {
	if !n.Alive() {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	at := time.Now()
	<-n.exited
	n.env.mu.Lock()
	n.env.kills[n.Log] = at
	n.env.mu.Unlock()
}

// Term sends SIGTERM and waits up to timeout for the process to exit; it
// returns the exit code (-1 when it had to be killed).
func (n *Node) Term(timeout time.Duration) (code int, took time.Duration) {
	start := time.Now()
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(timeout):
		n.Kill()
		return -1, time.Since(start)
	}
	took = time.Since(start)
	var exit *exec.ExitError
	if errors.As(n.err, &exit) {
		return exit.ExitCode(), took
	}
	return 0, took
}

// RSS is the process's resident memory in bytes (0 once it is gone).
func (n *Node) RSS() int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(n.Pid()) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// Nodes returns every node started so far, in order.
func (e *Env) Nodes() []*Node {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*Node(nil), e.nodes...)
}

// Kills returns when each killed process (by log file) was killed.
func (e *Env) Kills() map[string]time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]time.Time, len(e.kills))
	for k, v := range e.kills {
		out[k] = v
	}
	return out
}

func (e *Env) stopAll() {
	for _, n := range e.Nodes() {
		if n.Alive() {
			n.Term(10 * time.Second)
		}
	}
}

// WaitDrained waits until the queue holds no ready, delayed or inflight
// message, and returns how long that took.
func (e *Env) WaitDrained(ctx context.Context, queue string, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		st, err := e.Queue.Stats(ctx, pgqueue.DefaultAccount, queue)
		if err == nil && st.Total == 0 {
			return time.Since(start), nil
		}
		if time.Now().After(deadline) {
			return time.Since(start), fmt.Errorf("queue %s not drained after %s: %+v (stats error: %v)", queue, timeout, st, err)
		}
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(pollEvery(time.Since(start))):
		}
	}
}

// pollEvery is how often WaitDrained counts (Stats counts rows): often at
// first, each second after a while.
func pollEvery(waited time.Duration) time.Duration {
	if waited < 5*time.Second {
		return 100 * time.Millisecond
	}
	return time.Second
}

// IdleCgroup makes a cgroup in cgroup v1's cpu hierarchy marked idle
// (cpu.idle 1), for a node's --long-guest-cgroup, and removes it when the
// test ends. It reports "" with the reason where it cannot (not root, no
// such hierarchy).
func IdleCgroup(t testing.TB) (dir, whyNot string) {
	t.Helper()
	dir = fmt.Sprintf("/sys/fs/cgroup/cpu/sluice-reliability-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err.Error()
	}
	t.Cleanup(func() {
		// Threads of a node killed a moment ago may still be leaving it.
		var err error
		for range 50 {
			if err = os.Remove(dir); err == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("remove cgroup %s: %v", dir, err)
	})
	if err := os.WriteFile(filepath.Join(dir, "cpu.idle"), []byte("1"), 0); err != nil {
		return "", err.Error()
	}
	return dir, ""
}
