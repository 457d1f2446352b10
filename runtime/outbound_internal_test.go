package runtime

import (
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// TestPeersOf: the addresses a connection reaches through NAT64, which
// the outbound checks apply to (RFC 6052's places for each prefix length
// in the local-use prefix of RFC 8215, and in the network's own prefixes
// when named).
func TestPeersOf(t *testing.T) {
	own := []netip.Prefix{netip.MustParsePrefix("2001:db8:64::/96"), netip.MustParsePrefix("2001:db8:1::/48"),
		netip.MustParsePrefix("64:ff9b:1::/96")}
	for _, c := range []struct {
		addr string
		want []string
	}{
		{"10.0.0.1", []string{"10.0.0.1"}},
		{"2001:db8::a00:1", []string{"2001:db8::a00:1"}},
		{"64:ff9b::a9fe:a9fe", []string{"169.254.169.254"}},
		{"64:ff9b::5db8:d822", []string{"93.184.216.34"}},
		// The local-use prefix at /96: the shorter lengths' readings are
		// 0.0.0.0 (skipped) and 0.0.0.169 at /64.
		{"64:ff9b:1::a9fe:a9fe", []string{"0.0.0.169", "169.254.169.254"}},
		// At /48: 169.254.169.254 in bytes 6, 7, 9 and 10, around the u
		// octet.
		{"64:ff9b:1:a9fe:a9:fe00::", []string{"169.254.169.254", "254.169.254.0", "169.254.0.0"}},
		// At /64: 10.0.0.1 in bytes 9 to 12.
		{"64:ff9b:1::a:0:100:0", []string{"0.0.10.0", "0.10.0.0", "10.0.0.1", "1.0.0.0"}},
		// 93.184.216.10 at /64, which reads as 10.0.0.0 at /96: refused,
		// the price of not knowing the length.
		{"64:ff9b:1:0:5d:b8d8:a00:0", []string{"0.0.93.184", "0.93.184.216", "93.184.216.10", "10.0.0.0"}},
		// A nonzero u octet: not a /48, /56 or /64 address.
		{"64:ff9b:1:0:100::a00:1", []string{"10.0.0.1"}},
		// Nothing but the prefix: the address itself.
		{"64:ff9b:1::", []string{"64:ff9b:1::"}},
	} {
		var got []string
		for _, ip := range peersOf(net.ParseIP(c.addr), nil) {
			got = append(got, ip.String())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("peersOf(%s) = %v, want %v", c.addr, got, c.want)
		}
	}

	// The network's own prefixes, named: read at their lengths alone.
	for _, c := range []struct{ addr, want string }{
		{"2001:db8:64::a00:1", "10.0.0.1"},
		{"2001:db8:64::a9fe:a9fe", "169.254.169.254"},
		{"2001:db8:1:a9fe:a9:fe00::", "169.254.169.254"}, // /48: around the u octet
		// The local-use prefix at /96, named: 93.184.216.10 alone, not also
		// the readings of the lengths it might have had.
		{"64:ff9b:1::5db8:d80a", "93.184.216.10"},
		// Outside them: as without.
		{"64:ff9b::a00:1", "10.0.0.1"},
		{"2001:db8:65::a00:1", "2001:db8:65::a00:1"},
	} {
		got := peersOf(net.ParseIP(c.addr), own)
		if len(got) != 1 || got[0].String() != c.want {
			t.Errorf("peersOf(%s, %v) = %v, want [%s]", c.addr, own, got, c.want)
		}
	}
}

// TestCheckNAT64Prefix: a NAT64 prefix is an IPv6 prefix of one of RFC
// 6052's lengths.
func TestCheckNAT64Prefix(t *testing.T) {
	for _, p := range []string{"2001:db8::/32", "2001:db8:64::/40", "2001:db8:64::/48", "2001:db8:64::/56",
		"2001:db8:64::/64", "2001:db8:64::/96"} {
		if err := checkNAT64Prefix(netip.MustParsePrefix(p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, p := range []string{"2001:db8::/33", "2001:db8::/128", "10.0.0.0/8", "::ffff:10.0.0.0/104"} {
		err := checkNAT64Prefix(netip.MustParsePrefix(p))
		if err == nil {
			t.Errorf("%s: accepted", p)
		} else if want := "give an IPv6 prefix of length /32, /40, /48, /56, /64 or /96"; !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v does not say %q", p, err, want)
		}
	}
}

// TestNetworkRulesUnreachable: under DenyPrivateOutbound, a connection's
// special peers are reachable only when every one of them lies in a
// network of PrivateOutboundNetworks (the first that does not is named);
// public peers need no network.
func TestNetworkRulesUnreachable(t *testing.T) {
	open := networkRules{}
	some := networkRules{denyPrivate: true, reachable: []netip.Prefix{netip.MustParsePrefix("10.1.2.0/24"), netip.MustParsePrefix("fd12:3456::/48")}}
	none := networkRules{denyPrivate: true}
	for _, c := range []struct {
		peers      []string
		some, none string // the address unreachable ("": none)
	}{
		{[]string{"10.1.2.3"}, "", "10.1.2.3"},
		{[]string{"10.1.3.1"}, "10.1.3.1", "10.1.3.1"},
		{[]string{"93.184.216.34"}, "", ""},
		{[]string{"fd12:3456::1"}, "", "fd12:3456::1"},
		{[]string{"fd12:3457::1"}, "fd12:3457::1", "fd12:3457::1"},
		// Every reading of a local-use NAT64 address is a peer: one
		// outside the networks is enough to refuse the connection, and is
		// the one named.
		{[]string{"10.1.2.3", "192.168.0.1"}, "192.168.0.1", "10.1.2.3"},
		{[]string{"93.184.216.34", "10.1.2.3"}, "", "10.1.2.3"},
	} {
		var peers []net.IP
		for _, p := range c.peers {
			peers = append(peers, net.ParseIP(p))
		}
		for _, r := range []struct {
			name  string
			rules networkRules
			want  string
		}{{"deny off", open, ""}, {"10.1.2.0/24,fd12:3456::/48", some, c.some}, {"no networks", none, c.none}} {
			got := r.rules.unreachable(peers)
			if (got == nil) != (r.want == "") || got != nil && !got.Equal(net.ParseIP(r.want)) {
				t.Errorf("%s: unreachable(%v) = %v, want %q", r.name, c.peers, got, r.want)
			}
		}
	}
}
