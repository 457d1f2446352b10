package runtime

import (
	"net"
	"slices"
	"testing"
)

// TestPeersOf: the addresses a connection reaches through NAT64, which
// the outbound checks apply to (RFC 6052's places for each prefix length
// in the local-use prefix of RFC 8215).
func TestPeersOf(t *testing.T) {
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
		for _, ip := range peersOf(net.ParseIP(c.addr)) {
			got = append(got, ip.String())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("peersOf(%s) = %v, want %v", c.addr, got, c.want)
		}
	}
}
