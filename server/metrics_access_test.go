package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
)

// TestMetricsNeedAKey: /metrics on the API names no account's queues or
// functions to a client without a metrics:read key, and a key's scrape
// shows its own account only.
func TestMetricsNeedAKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("mine")
	other, otherTok := e.admin("secret-project")
	e.do(otherTok, "POST", "/"+other+"/secret-project/messages", `{}`).expect(201)
	e.do("", "GET", "/metrics", "").expectError(401, "unauthorized")
	e.do(tok, "GET", "/metrics", "").expectError(403, "forbidden")
	text := string(e.do(e.key(acct, []string{ScopeMetrics}), "GET", "/metrics", "").expect(200).body)
	if !strings.Contains(text, `queue="mine"`) {
		t.Errorf("own queue missing:\n%s", text)
	}
	for _, leak := range []string{"secret-project", other, "go_goroutines", "sluice_http_requests_total"} {
		if strings.Contains(text, leak) {
			t.Errorf("account %s's scrape shows %q", acct, leak)
		}
	}
}

// TestMetricsAddr: Config.MetricsAddr serves every account's metrics, and
// the process's, without a key.
func TestMetricsAddr(t *testing.T) {
	t.Parallel()
	_, schema := pgtest.Schema(t)
	ctx := context.Background()
	srv, err := Open(ctx, Config{DatabaseURL: os.Getenv(pgtest.EnvVar), Schema: schema, Migrate: true, MaxConns: 4,
		CacheDir: compiledCache(t), Logger: zerolog.Nop(), MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(ctx)
	for _, a := range []string{"000000000001", "000000000002"} {
		if _, _, err := srv.CreateKey(ctx, a, []string{ScopeSend}, nil, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.queue.CreateQueue(ctx, a, "q"+a, pgqueue.Settings{}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := http.Get("http://" + srv.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{`queue="q000000000001"`, `queue="q000000000002"`, "go_goroutines"} {
		if res.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("metrics listener: %d, lacks %s", res.StatusCode, want)
		}
	}
}

// TestMetricsSeriesCap: an account's queues and functions beyond
// MetricsSeriesPerAccount are summed under "~other".
func TestMetricsSeriesCap(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(c *Config) { c.MetricsSeriesPerAccount = 2 })
	acct, tok := e.admin("")
	for i := range 5 {
		q := fmt.Sprintf("q%d", i)
		e.do(tok, "POST", "/v1/accounts/"+acct+"/queues", `{"name":"`+q+`"}`).expect(201)
		e.do(tok, "POST", "/"+acct+"/"+q+"/messages", `{}`).expect(201)
		if _, err := e.srv.pool.Exec(context.Background(), fmt.Sprintf(`INSERT INTO %s.invocations (account, function, version,
			trigger_type, source, batch_size, started_at, duration_ms, outcome) VALUES ($1, $2, 1, 'queue', 'q', 1, now(), 1, 'success')`,
			e.srv.cfg.Schema), acct, fmt.Sprintf("f%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	text := string(e.do(e.key(acct, []string{ScopeMetrics}), "GET", "/metrics", "").expect(200).body)
	ready := grep(text, "sluice_queue_messages{")
	if n := strings.Count(ready, `state="ready"`); n != 3 {
		t.Errorf("%d ready series, want 2 queues and ~other:\n%s", n, ready)
	}
	if !strings.Contains(ready, fmt.Sprintf(`sluice_queue_messages{account="%s",queue="~other",state="ready"} 3`, acct)) {
		t.Errorf("no ~other summing 3 queues:\n%s", ready)
	}
	invs := grep(text, "sluice_invocations_total{")
	if n := strings.Count(invs, "\n") + 1; n != 3 || !strings.Contains(invs, `function="~other",outcome="success"} 3`) {
		t.Errorf("invocation series:\n%s", invs)
	}
}
