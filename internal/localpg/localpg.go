// Package localpg starts and stops a private PostgreSQL cluster from the
// local PostgreSQL installation, for development (`sluice dev`) and for the
// test suite when no database URL is given.
//
// The cluster lives in a folder of its own and listens only on a Unix socket
// inside that folder, so it never collides with another server on the
// machine. When the calling process is root, initdb and pg_ctl run as the
// `postgres` user, because PostgreSQL refuses to run as root.
package localpg

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Port names the socket file (.s.PGSQL.<Port>); no TCP port is opened.
const Port = 5432

// maxSocketPath is the longest socket path the kernel accepts, less a margin.
const maxSocketPath = 100

// ErrNotInstalled is returned when no PostgreSQL server binaries are found.
var ErrNotInstalled = errors.New("localpg: PostgreSQL is not installed: " +
	"install it with `apt-get install postgresql` (Debian/Ubuntu), " +
	"set DATABASE_URL to an existing server, " +
	"or run one with `docker compose up -d postgres`")

// Options tune the cluster at start.
type Options struct {
	// Durable keeps fsync on. Test clusters turn it off for speed; data in
	// such a cluster may be lost if the machine (not the process) crashes.
	Durable bool
}

// Cluster is a private PostgreSQL cluster.
type Cluster struct {
	dir       string // holds data/, the log and (when short enough) the socket
	socketDir string
	bindir    string
	owner     *user.User // nil when we run initdb and pg_ctl as ourselves
	started   bool       // this Cluster's Start started the server
}

// Started reports whether Start started the server, rather than finding
// it running (started by another process, e.g. another `sluice dev` or
// `sluice postgres start`). A caller stops only a server it started.
func (c *Cluster) Started() bool { return c.started }

// Dir is the cluster's folder.
func (c *Cluster) Dir() string { return c.dir }

// URL is a connection URL for the cluster's `postgres` database.
func (c *Cluster) URL() string {
	return c.URLFor("postgres")
}

// URLFor is a connection URL for the named database of the cluster.
func (c *Cluster) URLFor(database string) string {
	q := url.Values{}
	q.Set("host", c.socketDir)
	q.Set("port", strconv.Itoa(Port))
	q.Set("sslmode", "disable")
	return "postgres://postgres@/" + url.PathEscape(database) + "?" + q.Encode()
}

// FindBinDir returns the folder holding initdb and pg_ctl: from PATH, or the
// newest /usr/lib/postgresql/*/bin.
func FindBinDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "pg_ctl")) && isExecutable(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	return "", ErrNotInstalled
}

func versionOf(bindir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bindir)))
	return v
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// Open describes the cluster kept in dir without touching it: Start
// initialises and starts it, Stop stops it, URL tells how to reach it.
func Open(dir string) (*Cluster, error) {
	bindir, err := FindBinDir()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("localpg: folder %q: %w", dir, err)
	}
	if os.Geteuid() == 0 && !reachableByOthers(abs) {
		// The server runs as the postgres user, which cannot reach a folder
		// under a private parent (a checkout in /root, say): keep the
		// cluster under /tmp instead, named after the folder asked for.
		sum := sha256.Sum256([]byte(abs))
		abs = filepath.Join(os.TempDir(), "sluice-postgres-"+hex.EncodeToString(sum[:6]))
	}
	c := &Cluster{dir: abs, bindir: bindir, socketDir: filepath.Join(abs, "run")}
	if len(c.socketDir) > maxSocketPath {
		// Unix socket paths are short; use a folder under /tmp named after
		// the cluster folder, so the URL stays the same from run to run.
		sum := sha256.Sum256([]byte(abs))
		c.socketDir = filepath.Join(os.TempDir(), "sluice-pg-"+hex.EncodeToString(sum[:6]))
	}
	if os.Geteuid() == 0 {
		if c.owner, err = user.Lookup("postgres"); err != nil {
			return nil, fmt.Errorf("localpg: running as root needs a `postgres` user to run the server as (PostgreSQL refuses root): %w", err)
		}
	}
	return c, nil
}

// reachableByOthers reports whether every existing folder on the way to dir
// lets other users through (o+x); folders still to be made will be.
func reachableByOthers(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// Start initialises the cluster in dir when it holds none yet and starts it
// unless it is already running. It returns once the server accepts
// connections.
func Start(ctx context.Context, dir string, opts Options) (*Cluster, error) {
	c, err := Open(dir)
	if err != nil {
		return nil, err
	}
	return c, c.Start(ctx, opts)
}

// Start initialises the cluster when its folder holds none yet and starts
// it unless it is already running.
func (c *Cluster) Start(ctx context.Context, opts Options) error {
	for _, d := range []string{c.dir, c.socketDir} {
		// Parents are made traversable (0755): the server may run as another
		// user. The cluster's own data folder is private (initdb sees to it).
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("localpg: create %s: %w", d, err)
		}
		if err := c.chown(d); err != nil {
			return err
		}
	}
	if err := c.checkAccess(ctx); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(c.dataDir(), "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if _, err := c.exec(ctx, "initdb", "-D", c.dataDir(), "-U", "postgres",
			"--auth=trust", "--encoding=UTF8", "--locale=C"); err != nil {
			return err
		}
	}
	if c.running(ctx) {
		return nil
	}
	settings := fmt.Sprintf("-c listen_addresses='' -k %s -p %d -c max_connections=200", c.socketDir, Port)
	if !opts.Durable {
		// fsync off is what makes a throwaway cluster fast; synchronous_commit
		// keeps its default so tests see the server defaults users have.
		settings += " -c fsync=off -c full_page_writes=off"
	}
	logFile := filepath.Join(c.dir, "postgres.log")
	if _, err := c.exec(ctx, "pg_ctl", "start", "-w", "-t", "60", "-D", c.dataDir(),
		"-l", logFile, "-o", settings); err != nil {
		return fmt.Errorf("%w (server log: %s)", err, logFile)
	}
	c.started = true
	return nil
}

// Stop shuts the cluster down (fast mode: sessions are ended, no data lost).
// Stopping a cluster that is not running is not an error.
func (c *Cluster) Stop(ctx context.Context) error {
	if !c.running(ctx) {
		return nil
	}
	_, err := c.exec(ctx, "pg_ctl", "stop", "-w", "-m", "fast", "-D", c.dataDir())
	return err
}

// Crash stops the running cluster the way a crash would: pg_ctl stop in
// immediate mode (no shutdown checkpoint, sessions cut; the next Start
// replays the WAL). It returns once the server is gone.
func (c *Cluster) Crash(ctx context.Context) error {
	_, err := c.exec(ctx, "pg_ctl", "stop", "-w", "-m", "immediate", "-D", c.dataDir())
	return err
}

func (c *Cluster) dataDir() string { return filepath.Join(c.dir, "data") }

func (c *Cluster) running(ctx context.Context) bool {
	_, err := c.exec(ctx, "pg_ctl", "status", "-D", c.dataDir())
	return err == nil
}

// checkAccess fails early, with the reason, when the server's user cannot
// reach the cluster folder (e.g. a checkout under /root).
func (c *Cluster) checkAccess(ctx context.Context) error {
	if c.owner == nil {
		return nil
	}
	cmd := exec.CommandContext(ctx, "test", "-w", c.dir)
	c.runAsOwner(cmd)
	if cmd.Run() != nil {
		return fmt.Errorf("localpg: user postgres cannot write %s (a parent folder is not reachable for it); choose a folder under /tmp or /var/lib", c.dir)
	}
	return nil
}

func (c *Cluster) chown(path string) error {
	if c.owner == nil {
		return nil
	}
	uid, _ := strconv.Atoi(c.owner.Uid)
	gid, _ := strconv.Atoi(c.owner.Gid)
	if err := os.Chown(path, uid, gid); err != nil {
		return fmt.Errorf("localpg: chown %s to postgres: %w", path, err)
	}
	return nil
}

func (c *Cluster) runAsOwner(cmd *exec.Cmd) {
	if c.owner == nil {
		return
	}
	uid, _ := strconv.ParseUint(c.owner.Uid, 10, 32)
	gid, _ := strconv.ParseUint(c.owner.Gid, 10, 32)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	cmd.Env = append(os.Environ(), "HOME="+c.owner.HomeDir, "USER=postgres")
	cmd.Dir = "/"
}

func (c *Cluster) exec(ctx context.Context, tool string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bindir, tool), args...)
	c.runAsOwner(cmd)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Own process group: a Ctrl-C in the terminal must not kill the server
	// behind our back; we stop it ourselves.
	cmd.SysProcAttr.Setpgid = true
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("localpg: %s %s: %w: %s", tool, args[0], err, strings.TrimSpace(out.String()))
	}
	return out.Bytes(), nil
}
