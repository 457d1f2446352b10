package server

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/wire"
)

// A deploy that has not compiled within DeployWait answers 202 with a
// status to poll; a module that cannot load ends "failed" with the error
// a synchronous deploy gives, stores nothing and moves no alias.
func TestDeployCompilesInTheBackground(t *testing.T) {
	t.Parallel()
	// DeployWait -1 answers 202 even when the deploy ends before the
	// handler answers (a module that cannot load fails within
	// microseconds when the shared compilation cache holds it); the
	// answer's status is then already the final one.
	e := newEnv(t)
	e.srv.cfg.DeployWait = -1 // answer 202 at once
	acct := newAccount()
	tok := e.key(acct, []string{ScopeDeploy})
	base := "/v1/accounts/" + acct + "/functions/f"

	poll := func(res *response) wire.Deployment {
		t.Helper()
		var d wire.Deployment
		res.expect(202).decode(&d)
		loc := res.header.Get("Location")
		// The answer says where the deploy stands as it is written: on a
		// busy machine the deploy may have ended by then.
		if d.ID == "" || loc != base+"/deployments/"+d.ID {
			t.Fatalf("202 answer %+v, Location %q", d, loc)
		}
		for deadline := time.Now().Add(30 * time.Second); d.Status == wire.DeployCompiling && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			e.do(tok, "GET", loc, "").expect(200).decode(&d)
		}
		return d
	}

	d := poll(e.deploy(tok, acct, "f", "", wasmbuild.Handwritten("trap")))
	if d.Status != wire.DeployReady || d.Version != 1 || !d.Created || !d.AliasMoved || d.Error != nil {
		t.Fatalf("good module: %+v %+v", d, d.Error)
	}
	d = poll(e.deploy(tok, acct, "f", "", wasmbuild.Handwritten("unknown-import")))
	if d.Status != wire.DeployFailed || d.Error == nil || d.Error.Code != wire.CodeInvalidArgument ||
		!strings.Contains(d.Error.Message, "import") || d.Version != 0 {
		t.Fatalf("module that cannot load: %+v %+v", d, d.Error)
	}
	var fn wire.Function
	e.do(tok, "GET", base, "").expect(200).decode(&fn)
	if fn.LatestVersion != 1 || fn.Aliases["live"] != 1 {
		t.Errorf("after the failed deploy: latest %d, aliases %v; want 1 and live=1", fn.LatestVersion, fn.Aliases)
	}
	e.do(tok, "GET", base+"/deployments/nope", "").expectError(404, "not_found")
	other := e.key(newAccount(), []string{ScopeDeploy})
	e.do(other, "GET", "/v1/accounts/"+acct+"/functions/f/deployments/"+d.ID, "").expect(403)

	// With the default wait a quick compilation answers 201 with the result.
	e.srv.cfg.DeployWait = 0
	var sync wire.Deployment
	e.deploy(tok, acct, "g", "", wasmbuild.Handwritten("trap")).expect(201).decode(&sync)
	if sync.Status != wire.DeployReady || sync.Version != 1 {
		t.Errorf("synchronous deploy: %+v", sync)
	}
}
