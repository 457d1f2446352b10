package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("orders")
	e.do(tok, "POST", "/"+acct+"/orders/messages", `[1,2,3]`).expect(201)
	e.do(tok, "POST", "/"+acct+"/orders/messages/receive", `{}`).expect(200)
	if _, err := e.srv.pool.Exec(context.Background(), fmt.Sprintf(`INSERT INTO %s.invocations (account, function, version,
		trigger_type, source, batch_size, started_at, duration_ms, outcome) VALUES
		($1, 'mailer', 1, 'queue', 'orders', 1, now(), 250, 'success'),
		($1, 'mailer', 1, 'queue', 'orders', 1, now(), 2500, 'failure')`, e.srv.cfg.Schema), acct); err != nil {
		t.Fatal(err)
	}

	var stored int64
	if err := e.srv.pool.QueryRow(context.Background(), fmt.Sprintf(`SELECT sum(pg_column_size(m.body))
		FROM %[1]s.messages m JOIN %[1]s.queues q ON q.id = m.queue_id WHERE q.account = $1`, e.srv.cfg.Schema), acct).Scan(&stored); err != nil {
		t.Fatal(err)
	}

	metricsKey := e.key(acct, []string{ScopeMetrics})
	r := e.do(metricsKey, "GET", "/metrics", "").expect(200)
	text := string(r.body)
	for _, want := range []string{
		fmt.Sprintf(`sluice_queue_stored_bytes{account="%s",of="messages",queue="orders"} %d`, acct, stored),
		fmt.Sprintf(`sluice_queue_stored_bytes{account="%s",of="dlq",queue="orders"} 0`, acct),
		fmt.Sprintf(`sluice_queue_messages{account="%s",queue="orders",state="ready"} 2`, acct),
		fmt.Sprintf(`sluice_queue_messages{account="%s",queue="orders",state="inflight"} 1`, acct),
		fmt.Sprintf(`sluice_invocations_total{account="%s",function="mailer",outcome="failure"} 1`, acct),
		fmt.Sprintf(`sluice_invocation_duration_seconds_sum{account="%s",function="mailer",outcome="success"} 0.25`, acct),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// Counted once: a second scrape does not count the same rows again.
	text = string(e.do(metricsKey, "GET", "/metrics", "").expect(200).body)
	if !strings.Contains(text, fmt.Sprintf(`sluice_invocations_total{account="%s",function="mailer",outcome="success"} 1`, acct)) {
		t.Errorf("second scrape recounted invocations:\n%s", grep(text, "sluice_invocations_total"))
	}
	if r.header.Get("Content-Type") == "" {
		t.Error("no content type")
	}
}

func grep(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestMetricsLateCommits: another process's invocation rows may commit
// after rows with larger ids were scraped; they are still counted, once.
func TestMetricsLateCommits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := newAccount()
	metricsKey := e.key(acct, []string{ScopeMetrics})
	insert := func(id int64, ago string) {
		t.Helper()
		if _, err := e.srv.pool.Exec(context.Background(), fmt.Sprintf(`INSERT INTO %s.invocations (id, account, function, version,
			trigger_type, source, batch_size, started_at, duration_ms, outcome) OVERRIDING SYSTEM VALUE VALUES
			($1, $2, 'f', 1, 'queue', 'q', 1, now() - $3::interval, 5, 'success')`, e.srv.cfg.Schema), id, acct, ago); err != nil {
			t.Fatal(err)
		}
	}
	count := func() string {
		text := string(e.do(metricsKey, "GET", "/metrics", "").expect(200).body)
		return grep(text, fmt.Sprintf(`sluice_invocations_total{account="%s"`, acct))
	}
	want := func(n int) {
		t.Helper()
		if got, w := count(), fmt.Sprintf(`sluice_invocations_total{account="%s",function="f",outcome="success"} %d`, acct, n); got != w {
			t.Fatalf("got %q, want %q", got, w)
		}
	}
	insert(1, "1 hour")
	insert(10, "1 second")
	insert(11, "1 second")
	want(3)
	insert(5, "2 seconds") // committed late, below ids already counted
	want(4)
	want(4)
	insert(3, "1 hour") // above the settled floor (id 1), so still read
	want(5)
}
