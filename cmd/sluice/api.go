package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/client"
)

// This file holds what the API verbs (login, queues, mq, functions,
// invocations, keys, hooks) share: sub-command dispatch, flag parsing with
// flags after the arguments, the client from flags, env and config, and
// output as tables or JSON.

// subcommand is one verb of a command group, e.g. `mq send`.
type subcommand struct {
	name    string
	args    string // e.g. "QUEUE --body JSON"
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// dispatch runs the sub-command args[0] of group.
func dispatch(ctx context.Context, group string, subs []subcommand, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		groupUsage(stderr, group, subs)
		return usageErrorf("missing sub-command: use %s", subNames(subs))
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		groupUsage(stdout, group, subs)
		return nil
	}
	for _, s := range subs {
		if s.name == args[0] {
			return explain(s.run(ctx, args[1:], stdout, stderr))
		}
	}
	return usageErrorf("unknown sub-command %q: use %s", args[0], subNames(subs))
}

func subNames(subs []subcommand) string {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}

func groupUsage(w io.Writer, group string, subs []subcommand) {
	fmt.Fprintf(w, "usage: sluice %s <sub-command> [flags]\n\n", group)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, s := range subs {
		fmt.Fprintf(tw, "  %s %s\t%s\n", s.name, s.args, s.summary)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nEvery sub-command takes --json; `sluice %s <sub-command> -h` lists its flags.\n", group)
}

// explain turns an argument the client refused before sending (an
// *client.Error with Status 0) into a usage error (exit status 2), and
// says what to do about a refused key.
func explain(err error) error {
	var ce *client.Error
	switch {
	case errors.As(err, &ce) && ce.Status == 0 && !errors.Is(err, errUsage):
		return fmt.Errorf("%w: %w", errUsage, err)
	case client.IsUnauthorized(err):
		return fmt.Errorf("%w; check the access key (SLUICE_KEY, or `sluice login --endpoint URL --key ID:SECRET`)", err)
	}
	return err
}

// cliFlags is a flag set for an API verb, with the flags every API verb
// takes: where the API is, as whom, and --json.
type cliFlags struct {
	*flag.FlagSet
	name     string
	args     string
	config   string
	endpoint string
	account  string
	json     bool
}

// newCLIFlags returns the flag set of `sluice name args...`.
func newCLIFlags(name, args string) *cliFlags {
	f := &cliFlags{FlagSet: flag.NewFlagSet("sluice "+name, flag.ContinueOnError), name: name, args: args}
	f.SetOutput(io.Discard)
	f.Usage = func() {}
	f.StringVar(&f.config, "config", "", "config file written by sluice login (default $XDG_CONFIG_HOME/sluice/config.json) [SLUICE_CONFIG]")
	f.StringVar(&f.endpoint, "endpoint", "", "API URL, e.g. http://127.0.0.1:8080 (default: SLUICE_ENDPOINT, else the login's)")
	f.StringVar(&f.account, "account", "", "account, 12 digits (default: SLUICE_ACCOUNT, else the login's, else "+client.DefaultAccount+")")
	f.BoolVar(&f.json, "json", false, "print JSON (for scripts) instead of a table")
	return f
}

// parse parses args, where flags may come before, between or after the
// positional arguments, and returns exactly len(want) positionals (want
// names them for messages, e.g. "QUEUE"). -h prints the usage to stdout
// and returns flag.ErrHelp.
func (f *cliFlags) parse(args []string, stdout io.Writer, want ...string) ([]string, error) {
	return f.parseOptional(args, stdout, len(want), want...)
}

// parseOptional is parse where only the first required of the named
// positionals must be given: it returns required to len(want) of them.
func (f *cliFlags) parseOptional(args []string, stdout io.Writer, required int, want ...string) ([]string, error) {
	pos, err := parseInterspersed(f.FlagSet, args)
	if errors.Is(err, flag.ErrHelp) {
		f.printUsage(stdout)
		return nil, err
	} else if err != nil {
		return nil, usageErrorf("%v (see `sluice %s -h`)", err, f.name)
	}
	if len(pos) < required {
		return nil, usageErrorf("missing %s (sluice %s %s)", want[len(pos)], f.name, f.args)
	}
	if len(pos) > len(want) {
		return nil, usageErrorf("unexpected argument %q (sluice %s %s)", pos[len(want)], f.name, f.args)
	}
	return pos, nil
}

func (f *cliFlags) printUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: sluice %s %s\n\nflags:\n", f.name, f.args)
	f.SetOutput(w)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
}

// set reports whether flag name was given.
func (f *cliFlags) set(name string) bool {
	given := false
	f.Visit(func(fl *flag.Flag) {
		if fl.Name == name {
			given = true
		}
	})
	return given
}

// loadConfig is the config the flags, env and config file give, in that
// order of precedence.
func (f *cliFlags) loadConfig() (client.Config, error) {
	cfg, err := client.LoadConfig(f.config)
	if err != nil {
		return cfg, err
	}
	if f.endpoint != "" {
		cfg.Endpoint = f.endpoint
	}
	if f.account != "" {
		cfg.Account = f.account
	}
	return cfg, nil
}

// client is the API client the flags, env and config file describe.
func (f *cliFlags) client() (*client.Client, error) {
	cfg, err := f.loadConfig()
	if err != nil {
		return nil, err
	}
	c, err := cfg.Client(client.WithUserAgent("sluice-cli/" + version))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return c, nil
}

// start parses args like parse and returns the positionals and the
// client, for verbs with nothing else to check in between.
func (f *cliFlags) start(args []string, stdout io.Writer, want ...string) ([]string, *client.Client, error) {
	pos, err := f.parse(args, stdout, want...)
	if err != nil {
		return nil, nil, err
	}
	c, err := f.client()
	return pos, c, err
}

// output prints v as indented JSON with --json, else calls human.
func (f *cliFlags) output(w io.Writer, v any, human func(w io.Writer) error) error {
	if f.json {
		return printJSON(w, v)
	}
	return human(w)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes aligned columns: a header row, then one row per line.
func table(w io.Writer, header string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// fields writes "name:  value" lines, aligned.
func fields(w io.Writer, kv ...string) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[i], kv[i+1])
	}
	return tw.Flush()
}

// stamp formats a time for tables: UTC to the second, "-" when zero.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// orDash returns s, or "-" when empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// listFlag is a flag that may be repeated and takes comma-separated
// values: --scope mq:send --scope mq:receive or --scope mq:send,mq:receive.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}
