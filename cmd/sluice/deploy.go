package main

import (
	"context"
	"io"
	"os"

	"github.com/sluicehq/sluice/cmd/sluice/internal/deploycmd"
	"github.com/sluicehq/sluice/deploy"
	"github.com/sluicehq/sluice/pgqueue"
)

// runDeploy is `sluice deploy`: its logic is package deploycmd, which
// never imports the server.
func runDeploy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("deploy", stderr)
	file := fs.String("f", "sluice.yaml", "app manifest")
	account := fs.String("account", pgqueue.DefaultAccount, "account number: with DATABASE_URL, the account to deploy into; without it, the login's account unless given")
	schema := fs.String("schema", envOr("SLUICE_SCHEMA", "sluice"), "database schema [SLUICE_SCHEMA]")
	config := fs.String("config", "", "without DATABASE_URL: the config file written by sluice login (default $XDG_CONFIG_HOME/sluice/config.json) [SLUICE_CONFIG]")
	dryRun := fs.Bool("dry-run", false, "print the plan and change nothing")
	force := fs.Bool("force", false, "delete queues the manifest no longer declares even when they hold messages")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected argument %q: sluice deploy [-f sluice.yaml] [--dry-run] [--force]", fs.Arg(0))
	}
	opts := deploy.Options{DryRun: *dryRun, Force: *force}
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		return deployViaAPI(ctx, *file, *config, flagIfSet(fs, "account"), opts, stdout)
	}
	return deploycmd.ToDatabase(ctx, *file, url, *schema, *account, opts, stdout)
}
