package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/client"
)

func runFunctions(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "functions", []subcommand{
		{"list", "", "list the functions with their latest version and aliases", functionsList},
		{"get", "NAME", "show a function's versions and aliases", functionsGet},
		{"deploy", "NAME FILE.wasm [--alias live] [--memory-mb N] [--timeout-ms N] [--env K=V ...]", "upload a module as a new version", functionsDeploy},
		{"set-alias", "NAME ALIAS VERSION", "point an alias at a version", functionsSetAlias},
		{"rollback", "NAME [--alias live]", "point an alias back at its previous version", functionsRollback},
		{"invoke", functionsInvokeArgs, "run a deployed version once on a batch; prints each message's outcome, the emits and stderr", functionsInvoke},
	}, args, stdout, stderr)
}

// aliasList formats aliases as "live=3 canary=4", sorted.
func aliasList(a map[string]int) string {
	names := make([]string, 0, len(a))
	for n := range a {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + strconv.Itoa(a[n])
	}
	return orDash(strings.Join(parts, " "))
}

func functionsList(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("functions list", "")
	_, c, err := f.start(args, stdout)
	if err != nil {
		return err
	}
	fns, err := c.Functions.List(ctx)
	if err != nil {
		return err
	}
	return f.output(stdout, map[string][]client.Function{"functions": fns}, func(w io.Writer) error {
		if len(fns) == 0 {
			_, err := fmt.Fprintln(w, "no functions (deploy one with `sluice deploy` or `sluice functions deploy`)")
			return err
		}
		rows := make([][]string, len(fns))
		for i, fn := range fns {
			rows[i] = []string{fn.Name, strconv.Itoa(fn.LatestVersion), aliasList(fn.Aliases), stamp(fn.CreatedAt)}
		}
		return table(w, "NAME\tLATEST\tALIASES\tCREATED", rows)
	})
}

func functionsGet(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("functions get", "NAME")
	pos, c, err := f.start(args, stdout, "NAME")
	if err != nil {
		return err
	}
	fn, err := c.Functions.Get(ctx, pos[0])
	if err != nil {
		return err
	}
	return f.output(stdout, fn, func(w io.Writer) error {
		fmt.Fprintf(w, "function %s, aliases: %s, rollback to: %s\n\n", fn.Name, aliasList(fn.Aliases), aliasList(fn.RollbackTo))
		byVersion := map[int][]string{}
		for a, v := range fn.Aliases {
			byVersion[v] = append(byVersion[v], a)
		}
		rows := make([][]string, len(fn.Versions))
		for i, v := range fn.Versions {
			sha := v.SHA256
			if len(sha) > 12 {
				sha = sha[:12]
			}
			sort.Strings(byVersion[v.Version])
			rows[i] = []string{strconv.Itoa(v.Version), sha, strconv.Itoa(v.SizeBytes), strconv.Itoa(v.MemoryMB) + " MB",
				strconv.FormatInt(v.TimeoutMS, 10) + " ms", envList(v.Env), stamp(v.CreatedAt), orDash(strings.Join(byVersion[v.Version], " "))}
		}
		return table(w, "VERSION\tSHA256\tSIZE\tMEMORY\tTIMEOUT\tENV\tCREATED\tALIASES", rows)
	})
}

// envList formats an environment as "K=V K2=V2", sorted.
func envList(env map[string]string) string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + env[k]
	}
	return orDash(strings.Join(keys, " "))
}

func functionsDeploy(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("functions deploy", "NAME FILE.wasm [--alias live] [--memory-mb N] [--timeout-ms N] [--env K=V ...]")
	var o client.DeployOptions
	f.StringVar(&o.Alias, "alias", "live", "alias to move to the new version (empty: none)")
	f.IntVar(&o.MemoryMB, "memory-mb", 0, "memory limit in MiB (1-4096; default: the server's, 64)")
	f.IntVar(&o.TimeoutMS, "timeout-ms", 0, "time limit of one invocation in ms (1-900000; default: the server's, 30000)")
	var env listFlag
	f.Var(&env, "env", "environment variable K=V (repeat the flag for more)")
	pos, err := f.parse(args, stdout, "NAME", "FILE.wasm")
	if err != nil {
		return err
	}
	o.Env = map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usageErrorf("--env %q: want NAME=VALUE", kv)
		}
		o.Env[k] = v
	}
	module, err := os.ReadFile(pos[1])
	if err != nil {
		return err
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	d, err := c.Functions.Deploy(ctx, pos[0], module, o)
	if err != nil {
		return err
	}
	return f.output(stdout, d, func(w io.Writer) error {
		what := "deployed"
		if !d.Created {
			what = "unchanged, kept"
		}
		fmt.Fprintf(w, "function %s: %s version %d (sha256 %s)\n", pos[0], what, d.Version, d.SHA256)
		if d.AliasMoved {
			fmt.Fprintf(w, "alias %s now points at version %d\n", o.Alias, d.Version)
		}
		return nil
	})
}

func functionsSetAlias(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("functions set-alias", "NAME ALIAS VERSION")
	pos, err := f.parse(args, stdout, "NAME", "ALIAS", "VERSION")
	if err != nil {
		return err
	}
	v, err := strconv.Atoi(pos[2])
	if err != nil || v < 1 {
		return usageErrorf("version %q: want a positive integer", pos[2])
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	if err := c.Functions.SetAlias(ctx, pos[0], pos[1], v); err != nil {
		return err
	}
	return done(f, stdout, map[string]any{"function": pos[0], "alias": pos[1], "version": v},
		"alias %s of %s now points at version %d", pos[1], pos[0], v)
}

func functionsRollback(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("functions rollback", "NAME [--alias live]")
	alias := f.String("alias", "live", "alias to move back")
	pos, c, err := f.start(args, stdout, "NAME")
	if err != nil {
		return err
	}
	v, err := c.Functions.Rollback(ctx, pos[0], *alias)
	if err != nil {
		return err
	}
	return done(f, stdout, map[string]any{"function": pos[0], "alias": *alias, "version": v},
		"alias %s of %s rolled back to version %d", *alias, pos[0], v)
}
