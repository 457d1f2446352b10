package deploy_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/client/clienttest"
	"github.com/sluicehq/sluice/deploy"
	"github.com/sluicehq/sluice/pgqueue"
)

// A hook deployed straight to the database (deploy.OpenDB, what `sluice
// deploy` does with DATABASE_URL) is checked as the HTTP API checks it:
// too many secrets or a bad source, which the client sends on, the API
// refuses (400 invalid_argument) and the database path refuses with the
// same message; neither stores anything.
func TestDBHooksCheckedAsTheAPIChecks(t *testing.T) {
	t.Parallel()
	srv := clienttest.New(t)
	ctx := context.Background()
	db, err := deploy.OpenDB(ctx, deploy.DBConfig{URL: os.Getenv(clienttest.EnvVar), Schema: srv.Schema, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	c := srv.Client(t)
	if _, err := c.Queues.Create(ctx, "events", client.QueueSettings{}); err != nil {
		t.Fatal(err)
	}
	viaDB, viaAPI := db.Target(pgqueue.DefaultAccount), deploy.APITarget(c)
	secrets := make([]string, 11)
	for i := range secrets {
		secrets[i] = "s3cret"
	}
	for _, tc := range []struct {
		hook deploy.Hook
		want string
	}{
		{deploy.Hook{Name: "many", Queue: "events", Verify: "github", Secrets: secrets}, "11 secrets: use at most 10"},
		{deploy.Hook{Name: "src", Queue: "events", Verify: "none", Source: "cli"}, `invalid source "cli": use api or manifest`},
	} {
		_, apiErr := viaAPI.PutHook(ctx, tc.hook)
		var ce *client.Error
		if !errors.As(apiErr, &ce) || ce.Status != 400 || ce.Code != "invalid_argument" || ce.Message != tc.want {
			t.Errorf("API PutHook(%+v) = %v; want 400 invalid_argument: %s", tc.hook, apiErr, tc.want)
		}
		if _, err := viaDB.PutHook(ctx, tc.hook); err == nil || err.Error() != tc.want {
			t.Errorf("database PutHook(%+v) = %v; want %s", tc.hook, err, tc.want)
		}
	}
	if hs, err := c.Hooks.List(ctx); err != nil || len(hs) != 0 {
		t.Errorf("hooks after refusals = %+v, %v; want none", hs, err)
	}
}
