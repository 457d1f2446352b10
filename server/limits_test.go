package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

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

// TestDeploysAtOnceAreBounded: an account has at most maxAccountDeploys
// deploys compiling at once in a process (429 beyond); another account
// is not held back, and a finished deploy gives its slot back.
func TestDeploysAtOnceAreBounded(t *testing.T) {
	t.Parallel()
	var d deployJobs
	release := make(chan struct{})
	block := func(ctx context.Context) (functions.Deployment, error) {
		<-release
		return functions.Deployment{}, nil
	}
	var jobs []*deployJob
	for range maxAccountDeploys {
		j, err := d.start("a", "f", nil, block)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	_, err := d.start("a", "f", nil, block)
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status != 429 {
		t.Fatalf("deploy beyond the bound: %v, want a 429", err)
	}
	if _, err := d.start("b", "f", nil, block); err != nil {
		t.Fatalf("another account: %v", err)
	}
	close(release)
	<-jobs[0].done
	if _, err := d.start("a", "f", nil, block); err != nil {
		t.Fatalf("after a deploy ended: %v", err)
	}
}

// TestAccountSlots: take holds up to max per account; give frees one.
func TestAccountSlots(t *testing.T) {
	var s accountSlots
	if !s.take("a", 1) || s.take("a", 1) || !s.take("b", 1) {
		t.Fatal("take")
	}
	s.give("a")
	if !s.take("a", 1) {
		t.Fatal("take after give")
	}
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
