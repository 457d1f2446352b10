package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/server"
)

// TestPrivateOutboundDefaults: `sluice serve` keeps functions off loopback
// and private addresses unless told otherwise, `sluice dev` lets them call
// local services; SLUICE_DENY_PRIVATE_OUTBOUND sets the default either
// way, the flag wins over it, and an environment value that is not a
// boolean is a usage error naming it.
func TestPrivateOutboundDefaults(t *testing.T) {
	testFlagCases(t, "SLUICE_DENY_PRIVATE_OUTBOUND", func(c server.Config) any { return c.DenyPrivateOutbound }, []flagCase{
		{command: "serve", want: "true"},
		{command: "dev", want: "false"},
		{command: "serve", args: []string{"--deny-private-outbound=false"}, want: "false"},
		{command: "dev", args: []string{"--deny-private-outbound"}, want: "true"},
		{command: "serve", env: "false", want: "false"},
		{command: "dev", env: "true", want: "true"},
		{command: "serve", env: "false", args: []string{"--deny-private-outbound=true"}, want: "true"},
		{command: "serve", env: "yes please", err: `SLUICE_DENY_PRIVATE_OUTBOUND="yes please": use true or false`},
	})
}

// TestNAT64PrefixFlag: --nat64-prefix (or SLUICE_NAT64_PREFIXES) names the
// network's NAT64 prefixes for the runtime, comma-separated; the flag wins
// over the variable, and a value that is not a prefix is a usage error
// naming it. (The runtime refuses a prefix of another length than RFC
// 6052's: runtime/TestHostHTTPOwnNAT64Prefix.)
func TestNAT64PrefixFlag(t *testing.T) {
	testFlagCases(t, "SLUICE_NAT64_PREFIXES", func(c server.Config) any { return c.NAT64Prefixes }, []flagCase{
		{want: "[]"},
		{args: []string{"--nat64-prefix", "2001:db8:64::/96"}, want: "[2001:db8:64::/96]"},
		{args: []string{"--nat64-prefix", "2001:db8:64::/96, 64:ff9b:1::/96"}, want: "[2001:db8:64::/96 64:ff9b:1::/96]"},
		{env: "2001:db8:1::/48", want: "[2001:db8:1::/48]"},
		{env: "2001:db8:1::/48", args: []string{"--nat64-prefix", "2001:db8:64::/96"}, want: "[2001:db8:64::/96]"},
		{args: []string{"--nat64-prefix", "2001:db8:64::/96,banana"}, err: `--nat64-prefix "2001:db8:64::/96,banana": "banana" is not an IPv6 prefix`},
	})
}

// TestPrivateOutboundNetworksFlag: --private-outbound-networks (or
// SLUICE_PRIVATE_OUTBOUND_NETWORKS) reaches the server's configuration on
// serve, and on dev once --deny-private-outbound is on; without it, or
// with a value that is not a network, it is a usage error naming the value.
func TestPrivateOutboundNetworksFlag(t *testing.T) {
	testFlagCases(t, "SLUICE_PRIVATE_OUTBOUND_NETWORKS", func(c server.Config) any { return c.PrivateOutboundNetworks }, []flagCase{
		{command: "serve", want: "[]"},
		{command: "serve", args: []string{"--private-outbound-networks", "10.1.2.0/24, fd12:3456::/48"}, want: "[10.1.2.0/24 fd12:3456::/48]"},
		{command: "serve", env: "10.1.2.3/32", want: "[10.1.2.3/32]"},
		{command: "serve", env: "10.1.2.3/32", args: []string{"--private-outbound-networks", "10.9.0.0/16"}, want: "[10.9.0.0/16]"},
		{command: "dev", args: []string{"--deny-private-outbound", "--private-outbound-networks", "10.1.2.0/24"}, want: "[10.1.2.0/24]"},
		{command: "serve", args: []string{"--private-outbound-networks", "10.1.2.3"}, err: `--private-outbound-networks "10.1.2.3": "10.1.2.3" is not a network (e.g. 10.1.2.0/24; one address: 10.1.2.3/32)`},
		{command: "dev", args: []string{"--private-outbound-networks", "10.1.2.0/24"}, err: `--private-outbound-networks "10.1.2.0/24": these are what functions may still reach under --deny-private-outbound, which is off here`},
		{command: "serve", args: []string{"--deny-private-outbound=false", "--private-outbound-networks", "10.1.2.0/24"}, err: "which is off here"},
	})
}

// The guest memory bounds are given in MiB and passed on in bytes; the
// per-account bound defaults to 4096 MiB.
func TestGuestMemoryFlags(t *testing.T) {
	testFlagCases(t, "", func(c server.Config) any { return [2]int64{c.GuestMemory >> 20, c.GuestMemoryPerAccount >> 20} }, []flagCase{
		{command: "serve", want: "[0 4096]"},
		{command: "dev", args: []string{"--guest-memory-mb", "8192", "--guest-memory-mb-per-account", "512"}, want: "[8192 512]"},
		{command: "serve", args: []string{"--guest-memory-mb", "-1", "--guest-memory-mb-per-account", "0"}, want: "[-1 0]"},
		{command: "serve", args: []string{"--guest-memory-mb-per-account", "-5"}, err: "--guest-memory-mb-per-account -5: give a number of MiB up to 1099511627776 (0: no bound)"},
		{command: "serve", args: []string{"--guest-memory-mb", "1099511627777"}, err: "--guest-memory-mb 1099511627777: give at most 1099511627776 MiB (negative: no bound)"},
	})
}

// --page-reads, --receive-bytes and --answer-write-timeout reach the
// server's configuration; nonsense is refused, saying what to give.
func TestAnswerFlags(t *testing.T) {
	testFlagCases(t, "", func(c server.Config) any {
		return fmt.Sprint(c.PageReads, " ", c.ReceiveBytes, " ", c.AnswerWriteTimeout)
	}, []flagCase{
		{command: "serve", want: "32 268435456 1m0s"},
		{command: "dev", args: []string{"--page-reads", "8", "--receive-bytes", "1048576", "--answer-write-timeout", "30s"}, want: "8 1048576 30s"},
		{command: "serve", args: []string{"--page-reads", "0"}, err: "--page-reads 0: give at least 1 (32 by default)"},
		{command: "serve", args: []string{"--receive-bytes", "1000"}, err: "--receive-bytes 1000: give at least 1048576 (1 MiB, a message's most; 268435456 by default)"},
		{command: "serve", args: []string{"--answer-write-timeout", "10ms"}, err: "--answer-write-timeout 10ms: give at least 1s (1m by default)"},
	})
}

// flagCase is a command line of `sluice serve` or `sluice dev` (serve
// when command is empty) with an environment variable's value (env, when
// set), and the configuration value it gives (want, printed with
// fmt.Sprint) or the usage error check reports (err).
type flagCase struct {
	command, env string
	args         []string
	want, err    string
}

// testFlagCases runs each case as a subtest: variable set to its env,
// its flags checked, and the value of got in the resulting configuration.
func testFlagCases(t *testing.T, variable string, got func(server.Config) any, cases []flagCase) {
	t.Helper()
	for _, c := range cases {
		if c.command == "" {
			c.command = "serve"
		}
		t.Run(strings.Join(append([]string{c.command, "env=" + c.env}, c.args...), " "), func(t *testing.T) {
			if c.env != "" {
				t.Setenv(variable, c.env)
			}
			f, err := serveFlagsOf(t, c.command, c.args)
			if c.err != "" {
				wantUsageError(t, err, c.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v := fmt.Sprint(got(f.config("postgres://x", zerolog.Nop()))); v != c.want {
				t.Fatalf("%s: got %s, want %s", variable, v, c.want)
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
