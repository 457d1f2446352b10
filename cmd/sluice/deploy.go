package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/deploy"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/server"
)

func runDeploy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("deploy", stderr)
	file := fs.String("f", "sluice.yaml", "app manifest")
	account := fs.String("account", pgqueue.DefaultAccount, "account number")
	schema := fs.String("schema", envOr("SLUICE_SCHEMA", "sluice"), "database schema [SLUICE_SCHEMA]")
	if err := fs.Parse(args); err != nil {
		return err
	}
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		return deployViaAPI(ctx, *file, flagIfSet(fs, "account"), stdout)
	}
	m, err := manifest.ReadFile(*file)
	if err != nil {
		return err
	}
	srv, err := server.Open(ctx, server.Config{DatabaseURL: url, Schema: *schema, Migrate: true, Logger: zerolog.Nop()})
	if err != nil {
		return err
	}
	defer srv.Stop(context.Background())
	return applyManifest(ctx, srv, *account, m, stdout)
}

// applyManifest applies m and prints what changed.
func applyManifest(ctx context.Context, srv *server.Server, account string, m *manifest.Manifest, w io.Writer) error {
	changes, err := srv.Apply(ctx, account, m, goModules(m))
	return printChanges(w, changes, err)
}

// goModules returns the modules m declares, compiling its build: packages
// with the Go toolchain (only the CLI starts one).
func goModules(m *manifest.Manifest) deploy.Modules {
	return deploy.ManifestModules(m, wasmbuild.BuildDir, wasmbuild.RunCommand)
}

// printChanges prints what an apply changed, then its error.
func printChanges(w io.Writer, changes []deploy.Change, err error) error {
	for _, c := range changes {
		fmt.Fprintln(w, c)
	}
	if err == nil && len(changes) == 0 {
		fmt.Fprintln(w, "no changes")
	}
	return err
}
