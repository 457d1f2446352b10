// Package deploycmd is the logic of `sluice deploy`: it applies a
// manifest to a database through package deploy's database target, or
// through the HTTP API, printing what it does with timings. It never
// imports package server (a test checks), so deploying does not start
// or link a server.
package deploycmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/deploy"
	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
)

// ToDatabase deploys the app of the manifest file to account of the
// database at url (migrating it first), storing and compiling each
// function there, and prints the plan and each step.
func ToDatabase(ctx context.Context, file, url, schema, account string, opts deploy.Options, w io.Writer) error {
	m, err := manifest.ReadFile(file)
	if err != nil {
		return err
	}
	db, err := deploy.OpenDB(ctx, deploy.DBConfig{URL: url, Schema: schema, Migrate: true, Logger: zerolog.Nop()})
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	p := &progress{w: w, verb: "storing and compiling"}
	PrintApp(w, m)
	opts.OnPlan = p.plan(opts)
	plan, err := deploy.Apply(ctx, p.target(db.Target(account)), account, m, p.modules(m), opts)
	return Finish(w, plan, opts, err)
}

// ThroughAPI deploys the app of the manifest file through the HTTP API
// with c (whose key needs mq:admin and functions:deploy).
func ThroughAPI(ctx context.Context, c *client.Client, file string, opts deploy.Options, w io.Writer) error {
	m, err := manifest.ReadFile(file)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "deploying through %s (account %s)\n", c.Endpoint(), c.Account())
	PrintApp(w, m)
	p := &progress{w: w}
	opts.OnPlan = p.plan(opts)
	target := p.target(deploy.APITargetWithProgress(c, p.apiProgress))
	plan, err := deploy.Apply(ctx, target, c.Account(), m, p.modules(m), opts)
	return Finish(w, plan, opts, err)
}

// WithApply deploys m with apply (a running server's Apply, for sluice
// dev), printing the app, the plan and how it ended.
func WithApply(w io.Writer, m *manifest.Manifest, apply func(modules deploy.Modules, opts deploy.Options) (deploy.Plan, error)) error {
	PrintApp(w, m)
	p := &progress{w: w}
	opts := deploy.Options{OnPlan: p.plan(deploy.Options{})}
	plan, err := apply(Modules(m), opts)
	return Finish(w, plan, opts, err)
}

// PrintApp says which app a deploy deploys, and where the name comes from.
func PrintApp(w io.Writer, m *manifest.Manifest) {
	if m.App != "" {
		fmt.Fprintf(w, "app %s\n", m.App)
		return
	}
	fmt.Fprintf(w, "app %s (the manifest's folder name; set app: in the manifest to choose another)\n", deploy.AppName(m))
}

// Modules returns the modules m declares, compiling its build: packages
// with the Go toolchain and running its build commands (only the CLI
// starts a toolchain).
func Modules(m *manifest.Manifest) deploy.Modules {
	return deploy.ManifestModules(m, wasmbuild.BuildDir, wasmbuild.RunCommand)
}

// Finish reports how a deploy ended.
func Finish(w io.Writer, plan deploy.Plan, opts deploy.Options, err error) error {
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

// modules is Modules printing each build with its time and size.
func (p *progress) modules(m *manifest.Manifest) deploy.Modules {
	modules := Modules(m)
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
