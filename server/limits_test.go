package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/triggers"
	"github.com/sluicehq/sluice/wire"
)

// TestAccountLimits: an account creates at most its limits of queues,
// functions, triggers, hooks, keys and module bytes through the API
// (403 limit_exceeded beyond); replacing what exists is not creating; an
// account's own limits (SetAccountLimits) override the server's.
func TestAccountLimits(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(c *Config) {
		c.Limits = AccountLimits{Queues: 3, Functions: 1, Triggers: 2, Hooks: 1, Keys: 2}
	})
	acct, tok := e.admin("")
	v := "/v1/accounts/" + acct
	for i := range 3 {
		e.do(tok, "POST", v+"/queues", fmt.Sprintf(`{"name":"q%d"}`, i)).expect(201)
	}
	e.do(tok, "POST", v+"/queues", `{"name":"q3"}`).expectError(403, "limit_exceeded")
	e.do(tok, "POST", v+"/queues", `{"name":"q0"}`).expectError(409, "queue_exists")

	trap := wasmbuild.Handwritten("trap")
	e.deploy(tok, acct, "f", "", trap).expect(201)
	e.deploy(tok, acct, "g", "", trap).expectError(403, "limit_exceeded")
	e.deploy(tok, acct, "f", "?memory_mb=32", trap).expect(201) // a new version of f

	for _, n := range []string{"t0", "t1"} {
		e.do(tok, "PUT", v+"/triggers/"+n, `{"kind":"queue","queue":"q0","function":"f","enabled":false}`).expect(200)
	}
	e.do(tok, "PUT", v+"/triggers/t2", `{"kind":"queue","queue":"q0","function":"f","enabled":false}`).expectError(403, "limit_exceeded")
	e.do(tok, "PUT", v+"/triggers/t1", `{"kind":"queue","queue":"q1","function":"f","enabled":false}`).expect(200)

	e.do(tok, "POST", v+"/hooks", `{"name":"h0","queue":"q0","verify":"none"}`).expect(201)
	e.do(tok, "POST", v+"/hooks", `{"name":"h1","queue":"q0","verify":"none"}`).expectError(403, "limit_exceeded")
	e.do(tok, "POST", v+"/hooks", `{"name":"h0","queue":"q1","verify":"none"}`).expect(200)

	// The admin key is one of two.
	var k struct{ ID, Secret string }
	e.do(tok, "POST", v+"/keys", `{"scopes":["mq:send"]}`).expect(201).decode(&k)
	e.do(tok, "POST", v+"/keys", `{"scopes":["mq:send"]}`).expectError(403, "limit_exceeded")
	e.do(tok, "DELETE", v+"/keys/"+k.ID, "").expect(204) // a revoked key does not count
	e.do(tok, "POST", v+"/keys", `{"scopes":["mq:send"]}`).expect(201)

	// The account's own limits.
	ctx := context.Background()
	if err := e.srv.SetAccountLimits(ctx, acct, AccountLimits{Queues: 5, ModuleBytes: int64(len(trap)) + 10}); err != nil {
		t.Fatal(err)
	}
	if l, err := e.srv.AccountLimits(ctx, acct); err != nil || l.Queues != 5 || l.Functions != 1 {
		t.Fatalf("limits %+v %v", l, err)
	}
	e.do(tok, "POST", v+"/queues", `{"name":"q3"}`).expect(201)
	e.deploy(tok, acct, "f", "?memory_mb=48", trap).expect(201) // the same module is stored once
	e.deploy(tok, acct, "f", "", wasmbuild.Handwritten("recursion")).expectError(403, "limit_exceeded")
	// Another account keeps the server's limits.
	other, otherTok := e.admin("")
	for i := range 3 {
		e.do(otherTok, "POST", "/v1/accounts/"+other+"/queues", fmt.Sprintf(`{"name":"q%d"}`, i)).expect(201)
	}
	e.do(otherTok, "POST", "/v1/accounts/"+other+"/queues", `{"name":"q3"}`).expectError(403, "limit_exceeded")
}

// TestTopicsLimit: an account creates at most its limit of topics (403
// limit_exceeded beyond); creating one that exists is still a 409.
func TestTopicsLimit(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(c *Config) { c.Limits = AccountLimits{Topics: 2} })
	acct, tok := e.admin("")
	v := "/v1/accounts/" + acct
	e.do(tok, "POST", v+"/topics", `{"name":"t0"}`).expect(201)
	e.do(tok, "POST", v+"/topics", `{"name":"t1"}`).expect(201)
	e.do(tok, "POST", v+"/topics", `{"name":"t2"}`).expectError(403, "limit_exceeded")
	e.do(tok, "POST", v+"/topics", `{"name":"t0"}`).expectError(409, "topic_exists")
	if err := e.srv.SetAccountLimits(context.Background(), acct, AccountLimits{Topics: 3}); err != nil {
		t.Fatal(err)
	}
	e.do(tok, "POST", v+"/topics", `{"name":"t2"}`).expect(201)
}

// A deploy whose memory_mb the guest memory budgets would never let an
// instance reach is refused, naming the flag and the most it may give.
func TestDeployMemoryWithinGuestBudgets(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(c *Config) { c.GuestMemory, c.GuestMemoryPerAccount = 96<<20, 64<<20 })
	acct, tok := e.admin("")
	trap := wasmbuild.Handwritten("trap")
	msg := e.deploy(tok, acct, "f", "?memory_mb=65", trap).expectError(400, "invalid_argument")
	if want := "memory_mb 65 is over the 64 MiB this account's functions may hold at once on this server (sluice serve --guest-memory-mb-per-account, or the account's limits): give at most 64"; msg != want {
		t.Fatalf("deploy over the account's budget: %q, want %q", msg, want)
	}
	e.deploy(tok, acct, "f", "?memory_mb=64", trap).expect(201)

	e = newEnvWith(t, func(c *Config) { c.GuestMemory = 48 << 20 })
	acct, tok = e.admin("")
	msg = e.deploy(tok, acct, "f", "?memory_mb=49", trap).expectError(400, "invalid_argument")
	if want := "memory_mb 49 is over the 48 MiB all functions may hold at once on this server (sluice serve --guest-memory-mb): give at most 48"; msg != want {
		t.Fatalf("deploy over the server's budget: %q, want %q", msg, want)
	}
	e.deploy(tok, acct, "f", "?memory_mb=48", trap).expect(201)
}

// An account's own guest memory limit (AccountLimits.GuestMemoryMiB)
// takes the place of the server's bound per account, for deploys and for
// the instances of its functions loaded after it is set.
func TestAccountGuestMemoryLimit(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(c *Config) { c.GuestMemoryPerAccount = 64 << 20 })
	big, tok := e.admin("")
	small, smallTok := e.admin("")
	if err := e.srv.SetAccountLimits(t.Context(), big, AccountLimits{GuestMemoryMiB: 128}); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.SetAccountLimits(t.Context(), big, AccountLimits{GuestMemoryMiB: MaxGuestMemoryMiB + 1}); err == nil || !strings.Contains(err.Error(), "use at most") {
		t.Fatalf("guest memory past MaxGuestMemoryMiB: %v, want refused", err)
	}
	if l, err := e.srv.AccountLimits(t.Context(), small); err != nil || l.GuestMemoryMiB != 64 {
		t.Fatalf("limits of an account without its own: %+v, %v; want the server's 64 MiB", l, err)
	}
	trap := wasmbuild.Handwritten("trap")
	e.deploy(tok, big, "f", "?memory_mb=96", trap).expect(201)
	e.deploy(smallTok, small, "f", "?memory_mb=96", trap).expectError(400, "invalid_argument")
	hostile := wasmbuild.MustRead(t, "runtime/testdata/hostile", wasmbuild.Command)
	// The timeout only catches a hang: a function that has not completed a
	// batch runs confined, on a thread of nice 10, and under the suite's
	// load its 24 MiB bomb (a third of a second alone) once ran past 20 s.
	if _, err := e.srv.Registry().Deploy(t.Context(), big, "bomb", hostile, functions.Config{MemoryMiB: 96, Timeout: 2 * time.Minute}, ""); err != nil {
		t.Fatal(err)
	}

	// Lowered below what a deployed function may use, it holds for the
	// function's next instances.
	if err := e.srv.SetAccountLimits(t.Context(), big, AccountLimits{GuestMemoryMiB: 24}); err != nil {
		t.Fatal(err)
	}
	var res wire.InvokeResult
	e.do(e.key(big, []string{ScopeInvoke}), "POST", "/v1/accounts/"+big+"/functions/bomb/invoke", `{"bodies":[{"do":"membomb"}]}`).expect(200).decode(&res)
	if res.FailureKind != "memory_limit" || !strings.Contains(res.Messages[0].Error, "past the 24 MiB that its account's instances may hold together") {
		t.Fatalf("invoke past the account's 24 MiB: %+v", res)
	}
}

// TestDeploysAtOnceAreBounded: an account has at most maxAccountDeploys
// deploys compiling at once across the processes serving the database
// (429 beyond); another account is not held back, and a finished deploy
// gives its slot back.
func TestDeploysAtOnceAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := secondProcess(t, e).srv
	ctx := context.Background()
	release := make(chan struct{})
	block := func(ctx context.Context) (functions.Deployment, error) {
		<-release
		return functions.Deployment{}, nil
	}
	var jobs []*deployJob
	for i := range maxAccountDeploys {
		d := &e.srv.api.deploys
		if i%2 == 1 {
			d = &other.api.deploys
		}
		j, err := d.start(ctx, "a", "f", nil, block)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	for _, d := range []*deployJobs{&e.srv.api.deploys, &other.api.deploys} {
		_, err := d.start(ctx, "a", "f", nil, block)
		var ae *apiError
		if !errors.As(err, &ae) || ae.Status != 429 {
			t.Fatalf("deploy beyond the bound (%d held over two processes): %v, want a 429", maxAccountDeploys, err)
		}
	}
	if _, err := other.api.deploys.start(ctx, "b", "f", nil, block); err != nil {
		t.Fatalf("another account: %v", err)
	}
	close(release)
	<-jobs[0].done
	if _, err := other.api.deploys.start(ctx, "a", "f", nil, block); err != nil {
		t.Fatalf("after a deploy ended: %v", err)
	}
}

// TestLogStreamsAtOnceAreBounded: an account has at most
// maxAccountLogStreams log streams open at once across the processes
// serving the database (429 beyond, from either); a stream closed gives
// its slot back.
func TestLogStreamsAtOnceAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := secondProcess(t, e)
	acct, tok := e.admin("")
	path := "/v1/accounts/" + acct + "/logs?follow=true"
	open := func(ts *httptest.Server) *http.Response {
		t.Helper()
		req, err := http.NewRequest("GET", ts.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := ts.Client().Do(req) // a stream: the headers come at once, the body stays open
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	var streams []*http.Response
	defer func() {
		for _, s := range streams {
			s.Body.Close()
		}
	}()
	for i := range maxAccountLogStreams {
		ts := e.ts
		if i%2 == 1 {
			ts = other.ts
		}
		res := open(ts)
		if res.StatusCode != 200 {
			t.Fatalf("stream %d: status %d", i+1, res.StatusCode)
		}
		streams = append(streams, res)
	}
	for _, ts := range []*httptest.Server{e.ts, other.ts} {
		res := open(ts)
		res.Body.Close()
		if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" {
			t.Fatalf("stream beyond the bound (%d open over two processes): status %d, Retry-After %q, want 429 with it",
				maxAccountLogStreams, res.StatusCode, res.Header.Get("Retry-After"))
		}
	}
	// A stream closed by its client ends when the server sees the
	// connection close (the request's context ends); its slot is free then.
	streams[0].Body.Close()
	streams = streams[1:]
	for {
		res := open(other.ts)
		if res.StatusCode == 200 {
			streams = append(streams, res)
			break
		}
		res.Body.Close()
		if res.StatusCode != 429 {
			t.Fatalf("a stream after one closed: status %d", res.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAccountSlots: take holds up to max slots per account and kind over
// every process; give frees one; a holder's renewals keep its slot, and
// the slot of a holder that stopped renewing (its process died) is free
// once its lease ran out.
func TestAccountSlots(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := e.srv.api.slots, secondProcess(t, e).srv.api.slots
	ctx := context.Background()
	take := func(s *accountSlots, account, kind string) *heldSlot {
		t.Helper()
		h, err := s.take(ctx, account, kind, 2)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	h1, h2 := take(a, "a", slotLogStream), take(b, "a", slotLogStream)
	if h1 == nil || h2 == nil {
		t.Fatal("two slots of a bound of 2, one in each process: not taken")
	}
	if take(a, "a", slotLogStream) != nil || take(b, "a", slotLogStream) != nil {
		t.Fatal("a third slot of a bound of 2 was taken")
	}
	if take(b, "b", slotLogStream) == nil || take(b, "a", slotDeploy) == nil {
		t.Fatal("another account's or another kind's slot was refused")
	}
	h1.give()
	if h3 := take(b, "a", slotLogStream); h3 == nil || h3.slot != h1.slot {
		t.Fatalf("the slot given back was not taken again: %+v", h3)
	}

	// h2's process dies: its lease runs out (here: is made to have run
	// out) and the slot is free; the old holder's renewal then fails.
	if _, err := e.srv.pool.Exec(ctx, `UPDATE `+e.srv.cfg.Schema+`.account_slots SET expires_at = now() - interval '1 second'
		WHERE account = 'a' AND kind = $1 AND slot = $2`, slotLogStream, h2.slot); err != nil {
		t.Fatal(err)
	}
	if h4 := take(a, "a", slotLogStream); h4 == nil || h4.slot != h2.slot {
		t.Fatalf("the slot whose lease ran out was not taken: %+v", h4)
	}
	if err := h2.renew(ctx); !errors.Is(err, errSlotLost) {
		t.Fatalf("renewing a slot taken over: %v, want errSlotLost", err)
	}
	h2.give() // gives nothing: the slot is another holder's now
	if take(a, "a", slotLogStream) != nil {
		t.Fatal("the old holder's give freed the new holder's slot")
	}

	// A renewal moves the lease on.
	h5 := take(a, "c", slotDeploy)
	var before, after time.Time
	read := func(at *time.Time) {
		t.Helper()
		if err := e.srv.pool.QueryRow(ctx, `SELECT expires_at FROM `+e.srv.cfg.Schema+`.account_slots
			WHERE account = 'c' AND kind = $1 AND slot = $2`, slotDeploy, h5.slot).Scan(at); err != nil {
			t.Fatal(err)
		}
	}
	read(&before)
	if err := h5.renew(ctx); err != nil {
		t.Fatal(err)
	}
	read(&after)
	if !after.After(before) {
		t.Fatalf("a renewal left the lease at %v (was %v)", after, before)
	}
	h5.give()
}

// TestKVQuota: an account's key-value stores hold at most its quota of
// entries (403 limit_exceeded beyond, naming what they hold), through the
// API and for its functions alike (the engine's stores are the server's);
// a raised limit holds at once in the process that set it.
func TestKVQuota(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(c *Config) { c.Limits = AccountLimits{KVEntries: 2} })
	acct, _ := e.admin("")
	tok := e.key(acct, []string{ScopeAllKV})
	e.kvPut(tok, acct, "s", "a", "1", "").expect(204)
	e.kvPut(tok, acct, "other", "b", "2", "").expect(204)
	r := e.kvPut(tok, acct, "s", "c", "3", "")
	r.expectError(403, "limit_exceeded")
	if !strings.Contains(string(r.body), "hold 2 entries") || !strings.Contains(string(r.body), "quota is 2 entries") {
		t.Errorf("the refusal does not say what the stores hold and the quota: %s", r.body)
	}
	e.kvPut(tok, acct, "s", "a", "9", "").expect(204) // an overwrite grows nothing
	fn := triggers.AccountKV(e.srv.KV(), acct)
	if err := fn.Set(context.Background(), "s", []byte("c"), []byte("3"), 0); !errors.Is(err, runtime.ErrKVLimit) {
		t.Fatalf("a function's write past the quota: %v, want runtime.ErrKVLimit (errno limit)", err)
	}
	if err := e.srv.SetAccountLimits(context.Background(), acct, AccountLimits{KVEntries: 3}); err != nil {
		t.Fatal(err)
	}
	e.kvPut(tok, acct, "s", "c", "3", "").expect(204)
	if l, err := e.srv.AccountLimits(context.Background(), acct); err != nil || l.KVEntries != 3 || l.KVBytes != DefaultLimits.KVBytes {
		t.Fatalf("limits after the raise: %+v, %v", l, err)
	}
}

// TestRevokedKeysAreBounded: an account holds at most 10 times its keys
// limit of keys, live and revoked (403 limit_exceeded beyond, saying so);
// revoked keys older than 30 days are deleted when it creates a key.
func TestRevokedKeysAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(c *Config) { c.Limits = AccountLimits{Keys: 2} })
	acct, tok := e.admin("")
	v := "/v1/accounts/" + acct
	var k struct{ ID, Secret string }
	for range 19 { // with the admin key, 20 keys: 1 live, 19 revoked
		e.do(tok, "POST", v+"/keys", `{"scopes":["mq:send"]}`).expect(201).decode(&k)
		e.do(tok, "DELETE", v+"/keys/"+k.ID, "").expect(204)
	}
	r := e.do(tok, "POST", v+"/keys", `{"scopes":["mq:send"]}`)
	r.expectError(403, "limit_exceeded")
	if !strings.Contains(string(r.body), "19 of them revoked") || !strings.Contains(string(r.body), "may hold 20") {
		t.Errorf("the refusal does not say what counts: %s", r.body)
	}
	// 31 days later the revoked keys are gone at the next create.
	if _, err := e.srv.pool.Exec(context.Background(), `UPDATE `+pgx.Identifier{e.srv.cfg.Schema}.Sanitize()+
		`.access_keys SET revoked_at = revoked_at - interval '31 days' WHERE revoked_at IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	e.do(tok, "POST", v+"/keys", `{"scopes":["mq:send"]}`).expect(201)
	var list wire.KeyList
	e.do(tok, "GET", v+"/keys", "").expect(200).decode(&list)
	if len(list.Keys) != 2 {
		t.Fatalf("keys after the old revoked ones went: %d, want 2 (the admin key and the new one)", len(list.Keys))
	}
}

// TestInvokesAtOnceAreBounded: one account's invoke calls running at once
// are bounded over every process (maxAccountInvokes), below the
// process's own bound, so that another account still invokes.
func TestInvokesAtOnceAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := secondProcess(t, e)
	busy, _ := e.admin("busy")
	idle, _ := e.admin("idle")
	busyTok, idleTok := e.key(busy, []string{ScopeInvoke}), e.key(idle, []string{ScopeInvoke})
	ctx := context.Background()
	var held []*heldSlot
	for i := range maxAccountInvokes {
		s := e.srv.api.slots
		if i%2 == 1 {
			s = other.srv.api.slots
		}
		h, err := s.take(ctx, busy, slotInvoke, maxAccountInvokes)
		if err != nil || h == nil {
			t.Fatalf("slot %d: %v, %v", i+1, h, err)
		}
		held = append(held, h)
	}
	invoke := func(acct, tok string) *response {
		return e.do(tok, "POST", "/v1/accounts/"+acct+"/functions/nope/invoke", `{"bodies":[1]}`)
	}
	if msg := invoke(busy, busyTok).expectError(429, "too_many_requests"); !strings.Contains(msg, fmt.Sprintf("has %d invocations running", maxAccountInvokes)) {
		t.Errorf("invoke beyond the account's bound: %q", msg)
	}
	invoke(idle, idleTok).expectError(404, "not_found") // another account is not held back
	held[0].give()
	invoke(busy, busyTok).expectError(404, "not_found")
	for _, h := range held[1:] {
		h.give()
	}
}

// TestLogStreamFloorKeepsUp: a followed stream whose filter matches none
// of the records written raises its floor to the log's end once they are
// surely committed (logsSettle after it read where the end was), so its
// polls stop reading them again.
func TestLogStreamFloorKeepsUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, _ := e.admin("")
	ctx := context.Background()
	write := func(n int) {
		t.Helper()
		if _, err := e.srv.pool.Exec(ctx, `INSERT INTO `+pgx.Identifier{e.srv.cfg.Schema, "invocations"}.Sanitize()+`
			(account, function, version, trigger_type, source, batch_size, started_at, duration_ms, outcome)
			SELECT $1, 'fn', 1, 'invoke', 'test', 1, now() - interval '1 hour', 1, 'success' FROM generate_series(1, $2)`, acct, n); err != nil {
			t.Fatal(err)
		}
	}
	write(5)
	c := &call{key: &keyRecord{queues: []string{"*"}}, account: acct}
	f := triggers.InvocationFilter{Outcome: "failure", Limit: logsPage} // matches none
	s := logStream{seen: map[int64]int64{}}
	poll := func() {
		t.Helper()
		if _, caughtUp, err := s.poll(ctx, e.srv.api, c, f, nil, httptest.NewRecorder()); err != nil || !caughtUp {
			t.Fatalf("poll: caught up %v, %v", caughtUp, err)
		}
	}
	poll()
	if s.floor != 0 || s.mark == 0 {
		t.Fatalf("after the first poll: floor %d, mark %d; want 0 and the log's end", s.floor, s.mark)
	}
	end := s.mark
	write(5)
	poll() // within logsSettle of the mark: the floor stays
	if s.floor != 0 {
		t.Fatalf("floor %d before logsSettle passed", s.floor)
	}
	s.markAt = s.markAt.Add(-logsSettle) // as if logsSettle had passed
	poll()
	if s.floor != end || s.mark <= end {
		t.Errorf("after logsSettle: floor %d, mark %d; want %d and the new end", s.floor, s.mark, end)
	}
}

// TestMessageBytesLimit: an account whose messages and dead letters take
// up its MessageBytes (as last sampled) may not send, publish or take
// webhook deliveries (403 limit_exceeded, naming its bytes and limit)
// until it frees some or its limit is raised; receives go on, and other
// accounts are not held back.
func TestMessageBytesLimit(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(c *Config) { c.Limits = AccountLimits{MessageBytes: 1000} })
	ctx := context.Background()
	acct, tok := e.admin("q")
	other, otherTok := e.admin("q")
	v := "/v1/accounts/" + acct
	e.do(tok, "POST", v+"/topics", `{"name":"t"}`).expect(201)
	e.do(tok, "PUT", v+"/topics/t/subscriptions/q", "").expect(200)
	e.do(tok, "POST", v+"/hooks", `{"name":"h","queue":"q","verify":"none"}`).expect(201)
	big := fmt.Sprintf(`{"pad":%q}`, strings.Repeat("x", 1500)) // under 2 kB: not compressed
	// The message goes in by SQL (the queue core's own API does not check
	// the limit), so that the server first reads the account's stored
	// bytes after the sample (it keeps them 5 seconds).
	if _, err := e.srv.pool.Exec(ctx, "SELECT "+e.srv.cfg.Schema+".account_send($1, 'q', $2::jsonb)", acct, big); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.sweeper.RecordStats(ctx); err != nil {
		t.Fatal(err)
	}

	for what, r := range map[string]*response{
		"send":    e.do(tok, "POST", "/"+acct+"/q/messages", `{"n":1}`),
		"batch":   e.do(tok, "POST", "/"+acct+"/q/messages", `[1,2]`),
		"publish": e.do(tok, "POST", "/"+acct+"/topics/t/messages", `{"n":1}`),
		"webhook": e.hook(acct, "h", `{"n":1}`, nil),
	} {
		r.expectError(403, "limit_exceeded")
		if b := string(r.body); !strings.Contains(b, "account "+acct+" stores") || !strings.Contains(b, "its limit is 1000") {
			t.Errorf("%s: the refusal does not name the account's bytes and limit: %s", what, b)
		}
	}
	var q wire.Queue
	e.do(tok, "GET", v+"/queues/q", "").expect(200).decode(&q)
	if q.Stats == nil || q.Stats.Bytes < 1500 || q.Stats.DLQBytes != 0 {
		t.Fatalf("the queue's stats %+v do not show its 1,500-byte message", q.Stats)
	}
	if got := e.do(tok, "POST", "/"+acct+"/q/messages/receive", `{"max_messages": 10}`).expect(200).messages(); len(got) != 1 {
		t.Fatalf("received %d messages, want the 1 sent before the limit", len(got))
	}
	e.do(otherTok, "POST", "/"+other+"/q/messages", `{"n":1}`).expect(201)

	if err := e.srv.SetAccountLimits(ctx, acct, AccountLimits{MessageBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	e.do(tok, "POST", "/"+acct+"/q/messages", `{"n":1}`).expect(201)
	if l, err := e.srv.AccountLimits(ctx, acct); err != nil || l.MessageBytes != 1<<20 || l.KVBytes != DefaultLimits.KVBytes {
		t.Fatalf("limits after the raise: %+v, %v", l, err)
	}
}
