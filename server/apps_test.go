package server

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/wire"
)

// A deploy with dry_run=true answers what it would do (version, created,
// alias moved) and stores nothing: the same answer the real deploy then
// gives.
func TestDeployDryRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := newAccount()
	tok := e.key(acct, []string{ScopeDeploy})
	trap := wasmbuild.Handwritten("trap")
	dry := func(name, query string) wire.Deployment {
		t.Helper()
		var d wire.Deployment
		e.deploy(tok, acct, name, "?dry_run=true"+query, trap).expect(200).decode(&d)
		if d.Status != wire.DeployDryRun {
			t.Fatalf("dry run status %q", d.Status)
		}
		return d
	}
	if d := dry("f", ""); d.Version != 1 || !d.Created || !d.AliasMoved {
		t.Errorf("dry run of a new function: %+v", d)
	}
	e.do(tok, "GET", "/v1/accounts/"+acct+"/functions/f", "").expect(404)
	var real wire.Deployment
	e.deploy(tok, acct, "f", "", trap).expect(201).decode(&real)
	if d := dry("f", ""); d.Version != 1 || d.Created || d.AliasMoved || d.SHA256 != real.SHA256 {
		t.Errorf("dry run of the same module and config: %+v (deployed %+v)", d, real)
	}
	d := dry("f", "&memory_mb=32&env=MODE=x")
	if d.Version != 2 || !d.Created || !d.AliasMoved {
		t.Errorf("dry run of a new config: %+v", d)
	}
	var fn wire.Function
	e.do(tok, "GET", "/v1/accounts/"+acct+"/functions/f", "").expect(200).decode(&fn)
	if fn.LatestVersion != 1 {
		t.Errorf("a dry run stored a version: latest %d", fn.LatestVersion)
	}
	e.deploy(tok, acct, "f", "?memory_mb=32&env=MODE=x", trap).expect(201).decode(&real)
	if real.Version != d.Version || real.Created != d.Created || real.AliasMoved != d.AliasMoved {
		t.Errorf("the deploy did %+v, its dry run said %+v", real, d)
	}
	// Version 1's config again: compared with the latest version only, so
	// a new version 3.
	if d := dry("f", ""); d.Version != 3 || !d.Created || !d.AliasMoved {
		t.Errorf("dry run of version 1's config again (a new latest): %+v", d)
	}
	e.deploy(tok, acct, "f", "?dry_run=maybe", trap).expectError(400, "invalid_argument")
}

// A plan request with a field the API does not know is refused, naming
// it, as every other JSON body is (a misspelt "force" must not be
// ignored).
func TestPlanRefusesUnknownFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := newAccount()
	tok := e.key(acct, []string{ScopeAllMQ, ScopeDeploy})
	plan := "/v1/accounts/" + acct + "/apps/shop/plan"
	e.do(tok, "POST", plan, `{"manifest":"queues: {orders: {}}"}`).expect(200)
	msg := e.do(tok, "POST", plan, `{"manifest":"queues: {orders: {}}","forse":true}`).expectError(400, "invalid_argument")
	if !strings.Contains(msg, `unknown field "forse"`) {
		t.Errorf("plan with a misspelt field: %q, want it to name the field", msg)
	}
}
