// Package pgtest gives tests a real Postgres: one shared pool per test
// binary, from TEST_DATABASE_URL, and a fresh, migrated schema per test.
//
//	func TestSomething(t *testing.T) {
//		t.Parallel()
//		pool, schema := pgtest.Schema(t, pgqueue.Migrations)
//		...
//	}
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sluicehq/sluice/pgqueue/citus"
	"github.com/sluicehq/sluice/pgqueue/migrate"
)

// EnvVar names the environment variable holding the test database URL.
const EnvVar = "TEST_DATABASE_URL"

var (
	once    sync.Once
	pool    *pgxpool.Pool
	poolErr error
)

// Pool returns the pool shared by every test of the binary, connected to
// TEST_DATABASE_URL. It fails the test when the variable is unset or the
// database is unreachable. The pool lives until the binary exits.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	url := os.Getenv(EnvVar)
	if url == "" {
		t.Fatalf("pgtest: %s is not set: tests need a real Postgres; run `make test`, which starts one, or set %s=postgres://user@host:5432/db", EnvVar, EnvVar)
	}
	once.Do(func() {
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			poolErr = err
			return
		}
		if !strings.Contains(url, "pool_max_conns") {
			cfg.MaxConns = 24
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pool, poolErr = pgxpool.NewWithConfig(ctx, cfg)
		if poolErr == nil {
			poolErr = pool.Ping(ctx)
		}
	})
	if poolErr != nil {
		t.Fatalf("pgtest: connect to %s: %v", EnvVar, poolErr)
	}
	return pool
}

// CitusEnvVar names the environment variable that, set to 1, makes
// [Schema] distribute the queue tables after migrating (pgqueue/citus), for
// a TEST_DATABASE_URL that is a Citus coordinator (`make test-citus`).
const CitusEnvVar = "SLUICE_TEST_CITUS"

// Schema creates a uniquely named schema, applies lines to it, and drops it
// (with everything in it) when the test ends. It returns the shared pool
// and the schema name. With SLUICE_TEST_CITUS=1 and the pgqueue line among
// lines, it then distributes the queue tables on Citus, and those of the
// other lines with a Citus step.
func Schema(t testing.TB, lines ...migrate.Line) (*pgxpool.Pool, string) {
	t.Helper()
	p := Pool(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("pgtest: random schema name: %v", err)
	}
	schema := "test_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	t.Cleanup(func() {
		if _, err := p.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})
	if err := migrate.Up(ctx, p, schema, lines...); err != nil {
		t.Fatalf("pgtest: migrate schema %s: %v", schema, err)
	}
	if os.Getenv(CitusEnvVar) == "1" && slices.ContainsFunc(lines, func(l migrate.Line) bool { return l.Name == "pgqueue" }) {
		if err := citus.Distribute(ctx, p, schema, lines...); err != nil {
			t.Fatalf("pgtest: %s=1: %v", CitusEnvVar, err)
		}
	}
	return p, schema
}

// RemoteCommands returns a pool on pool's database whose sessions log the
// commands Citus sends to other nodes (citus.log_remote_commands), and
// take, which returns the commands logged since its last call. The pool is
// closed when the test ends.
func RemoteCommands(t testing.TB, pool *pgxpool.Pool) (logged *pgxpool.Pool, take func() []string) {
	t.Helper()
	cfg := pool.Config()
	cfg.ConnConfig.RuntimeParams["citus.log_remote_commands"] = "on"
	var mu sync.Mutex
	var log []string
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		log = append(log, n.Message)
		mu.Unlock()
	}
	logged, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(logged.Close)
	return logged, func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := log
		log = nil
		return out
	}
}

// AsyncCommitPool returns a pool on pool's database whose sessions commit
// without waiting for the disk (synchronous_commit off): what a statement
// costs beside its commit's flush. The pool is closed when the test ends.
func AsyncCommitPool(t testing.TB, pool *pgxpool.Pool) *pgxpool.Pool {
	t.Helper()
	cfg := pool.Config()
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	async, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(async.Close)
	return async
}

// WaitBlockedBy returns once some backend waits for a lock that backend
// pid holds: the statement a test ran beside a transaction holding locks
// is now blocked on them. It fails tb if that statement ends first (done
// reports its result).
func WaitBlockedBy(tb testing.TB, pool *pgxpool.Pool, pid uint32, done <-chan error) {
	tb.Helper()
	for {
		blocked, err := BlockedBy(context.Background(), pool, pid)
		if err != nil {
			tb.Fatal(err)
		}
		if blocked {
			return
		}
		select {
		case err := <-done:
			tb.Fatalf("the statement did not wait for the locks held by backend %d: it ended with %v", pid, err)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// BlockedBy reports whether some backend now waits for a lock that
// backend pid holds. Under CitusEnvVar pool is the coordinator's, pid a
// backend of it, and the locks it holds on the workers' shards count: a
// statement blocked there waits on a worker, where the coordinator's
// pg_blocking_pids does not look, and Citus' citus_lock_waits, which
// gathers the waits of every node, names the holder by its global pid
// (the node id times 10^10, plus the pid).
func BlockedBy(ctx context.Context, pool *pgxpool.Pool, pid uint32) (bool, error) {
	query := `SELECT EXISTS (SELECT 1 FROM pg_stat_activity a
	           WHERE $1::integer = ANY (pg_blocking_pids(a.pid)))`
	if os.Getenv(CitusEnvVar) == "1" {
		query += `
		OR EXISTS (SELECT 1 FROM citus_lock_waits w
		            WHERE w.blocking_gpid = citus_backend_gpid() / 10000000000 * 10000000000 + $1)`
	}
	var blocked bool
	err := pool.QueryRow(ctx, query, pid).Scan(&blocked)
	return blocked, err
}

// AtCommitOnMessages installs in schema a deferred constraint trigger
// named name on the messages table: for each row an event (INSERT, UPDATE
// or DELETE) touched, body (the statements of a plpgsql trigger function,
// with OLD and NEW) runs at the commit of the transaction that touched it,
// after its statements have run and answered, with the transaction's own
// settings still in force. Citus runs no such trigger on a distributed
// table: the test is skipped under CitusEnvVar.
func AtCommitOnMessages(t testing.TB, pool *pgxpool.Pool, schema, name, event, body string) {
	t.Helper()
	if os.Getenv(CitusEnvVar) == "1" {
		t.Skip("Citus runs no deferred constraint trigger on a distributed table")
	}
	s := pgx.Identifier{schema}.Sanitize()
	fn := s + "." + pgx.Identifier{name}.Sanitize()
	_, err := pool.Exec(context.Background(), `
CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
`+body+`
	RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER `+pgx.Identifier{name}.Sanitize()+` AFTER `+event+` ON `+s+`.messages
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION `+fn+`()`)
	if err != nil {
		t.Fatalf("trigger %s at commit on messages: %v", name, err)
	}
}

// RefuseCommits makes the commit of every transaction that updates a row
// of schema's messages table fail while refusing (on) is in force: a
// deferred constraint trigger (AtCommitOnMessages) raises "commit refused
// by the test" at commit, after the statements have run and answered, and
// after waiting delay (as a commit waits for its disk). on and off switch
// it (committed at once; it starts off). Skipped under CitusEnvVar, as
// AtCommitOnMessages is.
func RefuseCommits(t testing.TB, pool *pgxpool.Pool, schema string, delay time.Duration) (on, off func()) {
	t.Helper()
	s := pgx.Identifier{schema}.Sanitize()
	AtCommitOnMessages(t, pool, schema, "test_refuse_commit", "UPDATE", `
	IF EXISTS (SELECT 1 FROM `+s+`.test_refuse_commits) THEN
		PERFORM pg_sleep(`+strconv.FormatFloat(delay.Seconds(), 'f', -1, 64)+`);
		RAISE EXCEPTION 'commit refused by the test';
	END IF;`)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE `+s+`.test_refuse_commits (refuse boolean NOT NULL)`); err != nil {
		t.Fatalf("refuse commits: %v", err)
	}
	set := func(query string) func() {
		return func() {
			t.Helper()
			if _, err := pool.Exec(ctx, query); err != nil {
				t.Fatalf("refuse commits: %v", err)
			}
		}
	}
	return set(`INSERT INTO ` + s + `.test_refuse_commits VALUES (true)`), set(`DELETE FROM ` + s + `.test_refuse_commits`)
}
