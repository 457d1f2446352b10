package main

import (
	"errors"
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
			var f serveFlags
			fs := newFlagSet(c.command, io.Discard)
			f.register(fs, ":8080", "json", c.command == "serve")
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			err := f.check()
			if c.err != "" {
				if err == nil || !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("check: %v, want a usage error saying %q", err, c.err)
				}
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
