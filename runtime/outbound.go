package runtime

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// outboundRule is one entry of a function's allowed_outbound_hosts, in
// Spin's convention: scheme://host[:port], where scheme may be "*", host
// "*" or "*.example.com", and port "*"; an omitted port is the scheme's
// default.
type outboundRule struct {
	scheme string // "http", "https" or "*"
	host   string // lower case; "*" or "*.suffix" are wildcards
	port   string // digits, "*" or "" (the scheme's default)
}

// ValidateOutboundHost checks one allowed_outbound_hosts entry, such as
// "https://api.example.com", "http://127.0.0.1:*" or "https://*.example.com:8443".
func ValidateOutboundHost(entry string) error {
	_, err := parseOutboundRule(entry)
	return err
}

func parseOutboundRule(entry string) (outboundRule, error) {
	bad := func(why string) (outboundRule, error) {
		return outboundRule{}, fmt.Errorf("allowed outbound host %q: %s (use scheme://host[:port], e.g. https://api.example.com or http://127.0.0.1:*)", entry, why)
	}
	scheme, rest, ok := strings.Cut(entry, "://")
	if !ok {
		return bad("no scheme")
	}
	scheme = strings.ToLower(scheme)
	if scheme != "http" && scheme != "https" && scheme != "*" {
		return bad("scheme must be http, https or *")
	}
	rest = strings.TrimSuffix(rest, "/")
	if rest == "" || strings.ContainsAny(rest, "/?#@") {
		return bad("give a host and an optional port only, no path, query or user")
	}
	host, port := rest, ""
	if i := strings.LastIndexByte(rest, ':'); i >= 0 && !strings.HasSuffix(rest, "]") {
		host, port = rest[:i], rest[i+1:]
		if port != "*" {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return bad("port must be 1-65535 or *")
			}
		}
	}
	host = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if host == "" || strings.Contains(host[1:], "*") || strings.HasPrefix(host, "*") && host != "*" && !strings.HasPrefix(host, "*.") {
		return bad("host must be a name, an address, * or *.domain")
	}
	return outboundRule{scheme: scheme, host: host, port: port}, nil
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// matches reports whether the rule allows u (scheme, host and port).
func (r outboundRule) matches(u *url.URL) bool {
	scheme := strings.ToLower(u.Scheme)
	if r.scheme != "*" && r.scheme != scheme {
		return false
	}
	host := strings.ToLower(u.Hostname())
	switch {
	case r.host == "*":
	case strings.HasPrefix(r.host, "*."):
		if !strings.HasSuffix(host, r.host[1:]) {
			return false
		}
	case r.host != host:
		return false
	}
	port := u.Port()
	if port == "" {
		port = defaultPort(scheme)
	}
	return r.allowsPort(scheme, port)
}

// allowsPort reports whether the rule's port covers port: its own, "*",
// or when it names none, the default of scheme (of either scheme for
// "*").
func (r outboundRule) allowsPort(scheme, port string) bool {
	switch {
	case r.port != "":
		return r.port == "*" || r.port == port
	case scheme == "*":
		return port == "80" || port == "443"
	default:
		return defaultPort(scheme) == port
	}
}

// outboundPolicy is a function's outbound HTTP allow-list and the client
// that enforces it, down to the addresses it connects to.
type outboundPolicy struct {
	entries []string
	rules   []outboundRule
	client  *http.Client
	network networkRules
}

// networkRules are the runtime's outbound rules, shared by every
// function's policy.
type networkRules struct {
	// denyPrivate refuses special addresses even when listed literally
	// (Config.DenyPrivateOutbound), outside reachable.
	denyPrivate bool
	// reachable are the networks whose special addresses a literal entry
	// still reaches under denyPrivate (Config.PrivateOutboundNetworks),
	// masked.
	reachable []netip.Prefix
	// nat64 are the network's own NAT64 prefixes (Config.NAT64Prefixes),
	// masked.
	nat64 []netip.Prefix
}

// newNetworkRules checks and keeps cfg's outbound rules.
func newNetworkRules(cfg Config) (networkRules, error) {
	n := networkRules{denyPrivate: cfg.DenyPrivateOutbound}
	if len(cfg.PrivateOutboundNetworks) > 0 && !cfg.DenyPrivateOutbound {
		return n, fmt.Errorf("private outbound networks %s: they name what functions may still reach where private addresses are denied, and DenyPrivateOutbound is off (a literal entry reaches any private address)", prefixList(cfg.PrivateOutboundNetworks))
	}
	for _, p := range cfg.PrivateOutboundNetworks {
		if !p.IsValid() {
			return n, fmt.Errorf("private outbound network %q: give a network such as 10.1.2.0/24 or fd12:3456::/48", p)
		}
		n.reachable = append(n.reachable, p.Masked())
	}
	for _, p := range cfg.NAT64Prefixes {
		if err := checkNAT64Prefix(p); err != nil {
			return n, err
		}
		n.nat64 = append(n.nat64, p.Masked())
	}
	return n, nil
}

// prefixList writes prefixes as a comma-separated list, as the flags take
// them.
func prefixList(prefixes []netip.Prefix) string {
	s := make([]string, len(prefixes))
	for i, p := range prefixes {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// unreachable returns the first special address among peers that the
// runtime lets no literal entry reach, or nil. Every peer counts: under
// the local-use NAT64 prefix, each reading is an address the connection
// may reach.
func (n networkRules) unreachable(peers []net.IP) net.IP {
	if !n.denyPrivate {
		return nil
	}
	return firstOf(peers, func(ip net.IP) bool {
		if !special(ip) {
			return false
		}
		a, ok := netip.AddrFromSlice(ip)
		return !ok || !slices.ContainsFunc(n.reachable, func(p netip.Prefix) bool { return p.Contains(a.Unmap()) })
	})
}

// errDenied marks a request the function's allow-list refuses.
type deniedError struct{ msg string }

func (e *deniedError) Error() string { return e.msg }

func newOutboundPolicy(entries []string, network networkRules) (*outboundPolicy, error) {
	p := &outboundPolicy{entries: entries, network: network}
	for _, e := range entries {
		r, err := parseOutboundRule(e)
		if err != nil {
			return nil, err
		}
		p.rules = append(p.rules, r)
	}
	tr := &http.Transport{
		Proxy:                  nil, // never through a proxy: the dialer checks the real peer
		DialContext:            p.dial,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        30 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxResponseHeaderBytes: MaxHTTPResponseHeaderBytes,
		ExpectContinueTimeout:  time.Second,
	}
	p.client = &http.Client{Transport: tr, CheckRedirect: p.checkRedirect}
	return p, nil
}

// allowed returns nil when u may be called, else a deniedError.
func (p *outboundPolicy) allowed(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return &deniedError{fmt.Sprintf("url %q: only http and https urls can be called", u.Redacted())}
	}
	for _, r := range p.rules {
		if r.matches(u) {
			return nil
		}
	}
	if len(p.entries) == 0 {
		return &deniedError{fmt.Sprintf("%s://%s is not allowed: the function lists no allowed_outbound_hosts", u.Scheme, u.Host)}
	}
	return &deniedError{fmt.Sprintf("%s://%s is not allowed by allowed_outbound_hosts %q", u.Scheme, u.Host, p.entries)}
}

func (p *outboundPolicy) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if err := p.allowed(req.URL); err != nil {
		return &deniedError{"redirect to " + err.Error()}
	}
	return nil
}

// listedExactly reports whether an allow-list entry names host itself
// (not through a wildcard) with port, its own or its scheme's default
// (either default for a scheme of "*"), or "*": an entry naming the host
// for another port does not open that port to a wildcard entry.
func (p *outboundPolicy) listedExactly(host, port string) bool {
	host = strings.ToLower(host)
	for _, r := range p.rules {
		if r.host == host && r.allowsPort(r.scheme, port) {
			return true
		}
	}
	return false
}

// sharedSpace is 100.64.0.0/10, the shared address space of carrier-grade
// NAT (RFC 6598), which overlay networks use for their private hosts.
var sharedSpace = &net.IPNet{IP: net.IPv4(100, 64, 0, 0), Mask: net.CIDRMask(10, 32)}

// special reports whether ip is loopback, private, shared (100.64.0.0/10),
// link-local or unspecified: addresses a function reaches only when listed
// literally, and under Config.DenyPrivateOutbound only inside
// Config.PrivateOutboundNetworks (never, whatever the list, the link-local
// and metadata ones: metadataService).
func special(ip net.IP) bool {
	return ip.IsLoopback() || ip.IsPrivate() || sharedSpace.Contains(ip) || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsUnspecified()
}

// nat64 is the well-known NAT64 prefix 64:ff9b::/96 (RFC 6052): on a
// network with a NAT64 gateway, an address in it reaches the IPv4 address
// of its last four bytes.
var nat64 = &net.IPNet{IP: net.ParseIP("64:ff9b::"), Mask: net.CIDRMask(96, 128)}

// nat64Local is the local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215). A
// network places its own translation prefix inside it, of any length RFC
// 6052 allows from /48 to /96, and the IPv4 address sits at a different
// place for each length; which one the gateway uses is not known here.
var nat64Local = &net.IPNet{IP: net.ParseIP("64:ff9b:1::"), Mask: net.CIDRMask(48, 128)}

// rfc6052Places are the bytes of an IPv6 address that hold the IPv4
// address under a NAT64 prefix of each length RFC 6052 allows (the table
// of its section 2.2: below /96, byte 8 holds the u octet, which is zero,
// never the IPv4 address).
var rfc6052Places = map[int][4]int{
	32: {4, 5, 6, 7},
	40: {5, 6, 7, 9},
	48: {6, 7, 9, 10},
	56: {7, 9, 10, 11},
	64: {9, 10, 11, 12},
	96: {12, 13, 14, 15},
}

// nat64LocalLengths are the prefix lengths a network may use inside
// nat64Local, in the order peersOf reads them.
var nat64LocalLengths = []int{48, 56, 64, 96}

// checkNAT64Prefix reports whether p can be a NAT64 translation prefix
// (Config.NAT64Prefixes): an IPv6 prefix of one of the lengths of RFC 6052.
func checkNAT64Prefix(p netip.Prefix) error {
	if _, ok := rfc6052Places[p.Bits()]; !ok || !p.Addr().Is6() || p.Addr().Is4In6() {
		return fmt.Errorf("NAT64 prefix %s: give an IPv6 prefix of length /32, /40, /48, /56, /64 or /96 (RFC 6052), e.g. 2001:db8:64::/96", p)
	}
	return nil
}

// inside returns the IPv4 address ip holds under a NAT64 prefix of the
// given length (one of rfc6052Places').
func inside(ip net.IP, length int) net.IP {
	at := rfc6052Places[length]
	return net.IPv4(ip[at[0]], ip[at[1]], ip[at[2]], ip[at[3]])
}

// peersOf returns the addresses a connection to ip reaches, for the
// checks to apply to: ip itself, or through NAT64, the IPv4 address
// inside it (64:ff9b::a9fe:a9fe is 169.254.169.254), read at the place
// its prefix's length gives. Under the network's own prefixes (own,
// Config.NAT64Prefixes, which come first) and the well-known one, that
// reading is exact. Under the local-use prefix, whose length is the
// network's choice, it is every reading the lengths allow, except
// 0.0.0.0, where the reading of another length's address has only zero
// bytes and where no gateway sends. A wrong reading may refuse an
// address, never let one through: under the prefix 64:ff9b:1::/96 (zeros
// up to the IPv4 address) the other readings are 0.0.0.0 or 0.0.0.x,
// never refused; at /48 to /64, an address whose other readings (of its
// IPv4 bytes, or of the network's own prefix bytes after 64:ff9b:1)
// happen to fall in private space is (93.184.216.10 at /64 reads as
// 10.0.0.0 at /96; under a prefix 64:ff9b:1:a00::/64, every address reads
// as 10.0.x.x at /48). Naming the network's prefix in own makes its
// reading exact.
func peersOf(ip net.IP, own []netip.Prefix) []net.IP {
	if ip.To4() != nil {
		return []net.IP{ip}
	}
	if a, ok := netip.AddrFromSlice(ip); ok {
		for _, p := range own {
			if p.Contains(a) {
				return []net.IP{inside(ip, p.Bits())}
			}
		}
	}
	if nat64.Contains(ip) {
		return []net.IP{inside(ip, 96)}
	}
	if !nat64Local.Contains(ip) {
		return []net.IP{ip}
	}
	var peers []net.IP
	for _, length := range nat64LocalLengths {
		if length < 96 && ip[8] != 0 {
			continue // not this length: below /96, the u octet is zero
		}
		if v4 := inside(ip, length); !v4.IsUnspecified() {
			peers = append(peers, v4)
		}
	}
	if len(peers) == 0 {
		return []net.IP{ip}
	}
	return peers
}

// firstOf returns the first of ips for which is reports true, or nil.
func firstOf(ips []net.IP, is func(net.IP) bool) net.IP {
	for _, ip := range ips {
		if is(ip) {
			return ip
		}
	}
	return nil
}

// metadataAddrs are the cloud metadata services outside link-local
// space: AWS's over IPv6 (in fc00::/7), Alibaba Cloud's (in
// 100.64.0.0/10) and Azure's WireServer (168.63.129.16, a public address
// each Azure host answers for itself, which serves a VM's extension
// settings and certificates).
var metadataAddrs = []net.IP{net.ParseIP("fd00:ec2::254"), net.ParseIP("100.100.100.200"), net.ParseIP("168.63.129.16")}

// metadataService reports whether ip is link-local (where cloud providers
// serve instance metadata and credentials: 169.254.169.254 and the like)
// or another known metadata address: a function never reaches these, even
// listed literally and with private addresses allowed, since nothing a
// function does needs the host's credentials.
func metadataService(ip net.IP) bool {
	if ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() {
		return true
	}
	for _, m := range metadataAddrs {
		if m.Equal(ip) {
			return true
		}
	}
	return false
}

// dial connects to addr, refusing a loopback, private or link-local peer
// unless the allow-list names the host and port exactly and the runtime
// allows such a peer (networkRules.unreachable): a name that resolves (or
// is rebound) to such an address is refused at connect time.
func (p *outboundPolicy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	exact := p.listedExactly(host, port)
	literal := net.ParseIP(host) // nil for a name
	d := net.Dialer{Timeout: 10 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		h, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		ip := net.ParseIP(h)
		if ip == nil {
			return fmt.Errorf("dial %s: unparsable peer address %q", host, address)
		}
		peers := peersOf(ip, p.network.nat64)
		if m := firstOf(peers, metadataService); m != nil {
			return &deniedError{fmt.Sprintf("%s is %s, a link-local or cloud metadata address, which no function may reach (listed or not)", host, m)}
		}
		s := firstOf(peers, special)
		out := p.network.unreachable(peers)
		switch {
		case s == nil || exact && out == nil:
		case out != nil && len(p.network.reachable) > 0:
			return &deniedError{fmt.Sprintf("%s is a loopback, private or link-local address (%s) outside the networks this server lets functions reach (sluice serve --private-outbound-networks %s)", host, out, prefixList(p.network.reachable))}
		case out != nil:
			return &deniedError{fmt.Sprintf("%s is a loopback, private or link-local address (%s), which this server lets no function reach (sluice serve --deny-private-outbound)", host, out)}
		case literal.Equal(s):
			return &deniedError{fmt.Sprintf("%s is a loopback, private or link-local address: list it literally in allowed_outbound_hosts to reach it", host)}
		case literal != nil:
			return &deniedError{fmt.Sprintf("%s reaches %s through NAT64, a loopback, private or link-local address: list it literally in allowed_outbound_hosts to reach it", host, s)}
		default:
			return &deniedError{fmt.Sprintf("%s resolves to %s, a loopback, private or link-local address: list the host literally in allowed_outbound_hosts to reach it", host, s)}
		}
		return nil
	}}
	return d.DialContext(ctx, network, addr)
}

func (p *outboundPolicy) close() {
	p.client.CloseIdleConnections()
}
