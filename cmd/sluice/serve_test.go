package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestPrivateOutboundDefaults: `sluice serve` keeps functions off loopback
// and private addresses unless told otherwise, `sluice dev` lets them call
// local services; SLUICE_DENY_PRIVATE_OUTBOUND sets the default either
// way, the flag wins over it, and an environment value that is not a
// boolean is a usage error naming it.
func TestPrivateOutboundDefaults(t *testing.T) {
	for _, c := range []struct {
		command, env string
		args         []string
		want         bool
		err          string
	}{
		{command: "serve", want: true},
		{command: "dev", want: false},
		{command: "serve", args: []string{"--deny-private-outbound=false"}, want: false},
		{command: "dev", args: []string{"--deny-private-outbound"}, want: true},
		{command: "serve", env: "false", want: false},
		{command: "dev", env: "true", want: true},
		{command: "serve", env: "false", args: []string{"--deny-private-outbound=true"}, want: true},
		{command: "serve", env: "yes please", err: `SLUICE_DENY_PRIVATE_OUTBOUND="yes please": use true or false`},
	} {
		name := strings.Join(append([]string{c.command, "env=" + c.env}, c.args...), " ")
		t.Run(name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("SLUICE_DENY_PRIVATE_OUTBOUND", c.env)
			}
			f, err := serveFlagsOf(t, c.command, c.args)
			if c.err != "" {
				wantUsageError(t, err, c.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := f.config("postgres://x", zerolog.Nop()).DenyPrivateOutbound; got != c.want {
				t.Fatalf("DenyPrivateOutbound = %v, want %v", got, c.want)
			}
		})
	}
}

// TestNAT64PrefixFlag: --nat64-prefix (or SLUICE_NAT64_PREFIXES) names the
// network's NAT64 prefixes for the runtime, comma-separated; the flag wins
// over the variable, and a value that is not a prefix is a usage error
// naming it. (The runtime refuses a prefix of another length than RFC
// 6052's: runtime/TestHostHTTPOwnNAT64Prefix.)
func TestNAT64PrefixFlag(t *testing.T) {
	for _, c := range []struct {
		env  string
		args []string
		want string
		err  string
	}{
		{want: "[]"},
		{args: []string{"--nat64-prefix", "2001:db8:64::/96"}, want: "[2001:db8:64::/96]"},
		{args: []string{"--nat64-prefix", "2001:db8:64::/96, 64:ff9b:1::/96"}, want: "[2001:db8:64::/96 64:ff9b:1::/96]"},
		{env: "2001:db8:1::/48", want: "[2001:db8:1::/48]"},
		{env: "2001:db8:1::/48", args: []string{"--nat64-prefix", "2001:db8:64::/96"}, want: "[2001:db8:64::/96]"},
		{args: []string{"--nat64-prefix", "2001:db8:64::/96,banana"}, err: `--nat64-prefix "2001:db8:64::/96,banana": "banana" is not an IPv6 prefix`},
	} {
		t.Run(c.env+" "+strings.Join(c.args, " "), func(t *testing.T) {
			if c.env != "" {
				t.Setenv("SLUICE_NAT64_PREFIXES", c.env)
			}
			f, err := serveFlagsOf(t, "serve", c.args)
			if c.err != "" {
				wantUsageError(t, err, c.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(f.config("postgres://x", zerolog.Nop()).NAT64Prefixes); got != c.want {
				t.Fatalf("NAT64Prefixes = %s, want %s", got, c.want)
			}
		})
	}
}

// serveFlagsOf registers command's flags (serve or dev), parses args and
// returns the flags with check's verdict on them.
func serveFlagsOf(t *testing.T, command string, args []string) (*serveFlags, error) {
	t.Helper()
	f := &serveFlags{}
	fs := newFlagSet(command, io.Discard)
	f.register(fs, ":8080", "json", command == "serve")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f, f.check()
}

// wantUsageError fails t unless err is a usage error saying want.
func wantUsageError(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !errors.Is(err, errUsage) || !strings.Contains(err.Error(), want) {
		t.Fatalf("check: %v, want a usage error saying %q", err, want)
	}
}
