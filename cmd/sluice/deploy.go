package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/deploy"
	"github.com/sluicehq/sluice/functions"
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
	m, err := manifest.ReadFile(*file)
	if err != nil {
		return err
	}
	srv, err := server.Open(ctx, server.Config{DatabaseURL: url, Schema: *schema, Migrate: true, Logger: zerolog.Nop()})
	if err != nil {
		return err
	}
	defer srv.Stop(context.Background())
	p := &progress{w: stdout}
	p.verb = "storing and compiling"
	printApp(stdout, m)
	opts.OnPlan = p.plan(opts)
	plan, err := deploy.Apply(ctx, p.target(srv.DeployTarget(*account)), *account, m, p.modules(m), opts)
	return finishDeploy(stdout, plan, opts, err)
}

// printApp says which app a deploy deploys, and where the name comes from.
func printApp(w io.Writer, m *manifest.Manifest) {
	if m.App != "" {
		fmt.Fprintf(w, "app %s\n", m.App)
		return
	}
	fmt.Fprintf(w, "app %s (the manifest's folder name; set app: in the manifest to choose another)\n", deploy.AppName(m))
}

// applyManifest applies m and prints its plan.
func applyManifest(ctx context.Context, srv *server.Server, account string, m *manifest.Manifest, w io.Writer) error {
	printApp(w, m)
	p := &progress{w: w}
	opts := deploy.Options{OnPlan: p.plan(deploy.Options{})}
	plan, err := srv.Apply(ctx, account, m, goModules(m), opts)
	return finishDeploy(w, plan, opts, err)
}

// goModules returns the modules m declares, compiling its build: packages
// with the Go toolchain and running its build commands (only the CLI
// starts a toolchain).
func goModules(m *manifest.Manifest) deploy.Modules {
	return deploy.ManifestModules(m, wasmbuild.BuildDir, wasmbuild.RunCommand)
}

// progress prints what a deploy is doing, with timings: each build, each
// upload and compilation.
type progress struct {
	w    io.Writer
	verb string // what a Deploy does: "uploading" by default
	mu   sync.Mutex
}

func (p *progress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, args...)
}

// modules is goModules printing each build with its time and size.
func (p *progress) modules(m *manifest.Manifest) deploy.Modules {
	modules := goModules(m)
	return func(ctx context.Context, name string) ([]byte, error) {
		f := m.Functions[name]
		what := "reading " + f.Wasm
		switch {
		case f.Build.Package != "":
			what = "building " + f.Build.Package + " (go)"
		case f.Build.Command != "":
			what = "building with `" + f.Build.Command + "`"
		}
		p.printf("%s: %s… ", name, what)
		start := time.Now()
		module, err := modules(ctx, name)
		if err != nil {
			p.printf("failed\n")
			return nil, err
		}
		p.printf("%s, %s\n", elapsed(start), megabytes(len(module)))
		return module, nil
	}
}

// target wraps t to print each function's upload and compilation.
func (p *progress) target(t deploy.Target) deploy.Target {
	return progressTarget{Target: t, p: p}
}

// apiProgress is the progress callback of deploy.APITargetWithProgress.
func (p *progress) apiProgress(_, status string) {
	if status == "compiling" {
		p.printf("compiling… ")
	}
}

type progressTarget struct {
	deploy.Target
	p *progress
}

func (t progressTarget) Deploy(ctx context.Context, name string, module []byte, cfg functions.Config) (int, bool, bool, error) {
	verb := t.p.verb
	if verb == "" {
		verb = "uploading"
	}
	t.p.printf("%s: %s %s… ", name, verb, megabytes(len(module)))
	start := time.Now()
	v, created, moved, err := t.Target.Deploy(ctx, name, module, cfg)
	switch {
	case err != nil:
		t.p.printf("failed after %s\n", elapsed(start))
	case created || moved:
		t.p.printf("live as version %d (%s)\n", v, elapsed(start))
	default:
		t.p.printf("unchanged, version %d (%s)\n", v, elapsed(start))
	}
	return v, created, moved, err
}

func elapsed(start time.Time) string { return fmt.Sprintf("%.1f s", time.Since(start).Seconds()) }

func megabytes(n int) string {
	if n < 100_000 {
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// plan returns the OnPlan of a deploy: it prints the plan.
func (p *progress) plan(opts deploy.Options) func(deploy.Plan) {
	return func(plan deploy.Plan) {
		p.mu.Lock()
		defer p.mu.Unlock()
		switch {
		case opts.DryRun:
			fmt.Fprintln(p.w, "plan (dry run: nothing is changed):")
		case plan.Changes():
			fmt.Fprintln(p.w, "plan:")
		}
		plan.Print(p.w)
	}
}

// finishDeploy reports how a deploy ended.
func finishDeploy(w io.Writer, plan deploy.Plan, opts deploy.Options, err error) error {
	var loss *deploy.DataLossError
	switch {
	case errors.As(err, &loss):
		return err
	case err != nil:
		return err
	case opts.DryRun:
		fmt.Fprintln(w, "dry run: nothing was changed; run without --dry-run to apply")
	case plan.Changes():
		fmt.Fprintf(w, "app %s deployed\n", plan.App)
	default:
		fmt.Fprintln(w, "no changes")
	}
	return nil
}
