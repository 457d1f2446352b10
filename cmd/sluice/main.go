// Command sluice runs and drives the Sluice queue trigger runtime.
//
// Each sub-command lives in its own file and is listed in commands below;
// this package only parses flags and environment and calls into the library
// packages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// command is one sub-command of the CLI.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands lists the sub-commands in the order `sluice help` shows them.
func commands() []command {
	return []command{
		{"version", "print the version", runVersion},
		{"dev", "run Sluice locally with ./sluice.yaml (or -f; else the examples), starting Postgres if needed; one per folder", runDev},
		{"serve", "run the sweeper, triggers and HTTP API against DATABASE_URL", runServe},
		{"deploy", "deploy an app (sluice.yaml): print its plan and apply it (--dry-run: only print; --force: drop queues with messages)", runDeploy},
		{"apps", "list, show or delete the apps deploys made (each manifest's app:)", runApps},
		{"health", "probe a server's /readyz (exit 0 when ready, 1 if not): a container healthcheck", runHealth},
		{"postgres", "start, stop or locate the local development Postgres", runPostgres},
		{"login", "save the API endpoint and access key the other commands use", runLogin},
		{"queues", "list, show, create, update or delete queues", runQueues},
		{"mq", "send, receive, delete, peek, purge messages; read, purge or redrive DLQs", runMQ},
		{"topics", "list, create or delete topics, subscribe queues, publish", runTopics},
		{"functions", "list functions, show versions, deploy, set aliases, roll back", runFunctions},
		{"invocations", "list recent function invocations, or show one by id", runInvocations},
		{"triggers", "list, show, enable, disable or delete triggers", runTriggers},
		{"logs", "show or follow (--follow) function logs and invocation outcomes", runLogs},
		{"keys", "create, list or revoke access keys", runKeys},
		{"hooks", "list, create or delete webhook endpoints", runHooks},
		{"kv", "get, set, list or delete keys of the key-value stores functions use", runKV},
		{"migrate", "apply database migrations to DATABASE_URL", runMigrate},
		{"invoke", "run a function on one batch locally and print the outcome", runInvoke},
		{"new", "scaffold a function project (Go, C, Rust or AssemblyScript) that builds and deploys as is", runNew},
	}
}

// errUsage marks an error caused by how the command was called; main exits 2.
var errUsage = errors.New("usage")

func main() {
	zerolog.TimeFieldFormat = time.RFC3339Nano
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 2 && args[0] == "help" {
		args = []string{args[1], "-h"} // sluice help CMD is sluice CMD -h
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		errOut := stderr
		if len(args) == 2 && isHelp(args[1]) {
			errOut = stdout // asked for: the usage is the output
		}
		err := c.run(ctx, args[1:], stdout, errOut)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(stderr, "sluice %s: %v\n", c.name, err)
			return 2
		default:
			fmt.Fprintf(stderr, "sluice %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "sluice: unknown command %q (run `sluice help` for the list)\n", args[0])
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: sluice <command> [flags]")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
}

// newFlagSet returns a flag set for a sub-command that reports errors
// instead of exiting, writing its usage ("usage: sluice NAME [flags]" and
// the flags, unless the command sets its own) to stderr.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("sluice "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: sluice %s [flags]\n", name)
		fs.PrintDefaults()
	}
	return fs
}

// parseInterspersed parses args with fs, where flags may come before,
// between or after the positional arguments, and returns the positionals
// in order; everything after "--" is positional. Its errors are fs.Parse's.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageErrorf wraps a message as a usage error.
func usageErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

func runVersion(_ context.Context, args []string, stdout, _ io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprintln(stdout, "usage: sluice version\n  print the version of this sluice binary")
		return flag.ErrHelp
	}
	_, err := fmt.Fprintf(stdout, "sluice %s\n", version)
	return err
}

// isHelp reports whether arg asks for a command's usage.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}
