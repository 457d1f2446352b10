package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/runtime"
)

// upstream is a real HTTP server on 127.0.0.1 the guests call.
func upstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			fmt.Fprint(w, "hello")
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s %s %s", r.Method, r.Header.Get("X-Test"), b)
		case "/sleep":
			select {
			case <-time.After(time.Minute): // far beyond any cap the tests set
			case <-r.Context().Done():
			}
		case "/big":
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			_, _ = w.Write([]byte(strings.Repeat("x", n)))
		case "/bigheaders":
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			w.Header().Set("X-Pad", strings.Repeat("x", n))
			_, _ = w.Write([]byte("ok"))
		case "/redirect":
			http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// ops runs one message per op and returns each message's result text.
func ops(t *testing.T, f *runtime.Function, ops ...map[string]any) ([]string, runtime.Result) {
	t.Helper()
	bodies := make([]string, len(ops))
	for i, o := range ops {
		b, _ := json.Marshal(o)
		bodies[i] = string(b)
	}
	res := invoke(t, f, batch(bodies...))
	if res.Failure != nil {
		t.Fatalf("batch failed: %s\n%s", res.Failure.Message, res.Stderr)
	}
	out := make([]string, len(res.Messages))
	for i, m := range res.Messages {
		out[i] = m.Error
	}
	return out, res
}

func wantPrefix(t *testing.T, what, got, prefix string) {
	t.Helper()
	if !strings.HasPrefix(got, prefix) {
		t.Errorf("%s: got %q, want prefix %q", what, got, prefix)
	}
}

func TestHostHTTPAllowList(t *testing.T) {
	t.Parallel()
	srv := upstream(t)
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	byName := "http://localhost:" + port
	modes(t, func(t *testing.T, mode wasmbuild.Mode) {
		rt, _ := newRuntime(t)
		f := load(t, rt, "runtime/testdata/hostcalls", mode, runtime.FunctionConfig{AllowedOutboundHosts: []string{"http://127.0.0.1:*"}})
		out, res := ops(t, f,
			map[string]any{"op": "http", "url": srv.URL + "/ok"},
			map[string]any{"op": "http", "url": srv.URL + "/echo", "method": "POST", "body": "ping"},
			map[string]any{"op": "http", "url": byName + "/ok"},
			map[string]any{"op": "http", "url": "https://example.com/"},
			map[string]any{"op": "http", "url": srv.URL + "/redirect?to=" + byName + "/ok"},
			map[string]any{"op": "http", "url": srv.URL + "/redirect?to=/ok"},
		)
		wantPrefix(t, "allowed literal address", out[0], "ok 200 hello")
		wantPrefix(t, "post with body", out[1], "ok 200 POST  ping")
		wantPrefix(t, "localhost, not listed", out[2], "error denied: http_request: http://localhost:"+port+" is not allowed")
		wantPrefix(t, "other host", out[3], "error denied: http_request: https://example.com is not allowed")
		wantPrefix(t, "redirect to a denied host", out[4], "error denied:")
		if !strings.Contains(out[4], "redirect to http://localhost") {
			t.Errorf("redirect: %q does not name the redirect", out[4])
		}
		wantPrefix(t, "redirect to an allowed url", out[5], "ok 200 hello")
		h := res.Host
		if h.HTTPRequests != 4 || h.HTTPErrors != 3 || h.HTTPBytesSent != 4 || h.HTTPBytesReceived < 15 {
			t.Errorf("host stats %+v, want 4 requests (2 refused before sending), 3 errors, 4 bytes sent", h)
		}
	})
}

// A name that resolves to a loopback address is refused unless the name
// itself is listed, even when a wildcard allows it (DNS rebinding).
func TestHostHTTPNameResolvingToLoopback(t *testing.T) {
	t.Parallel()
	srv := upstream(t)
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	rt, _ := newRuntime(t)
	wild := load(t, rt, "runtime/testdata/hostcalls", wasmbuild.Reactor, runtime.FunctionConfig{Name: "wild", AllowedOutboundHosts: []string{"http://*:*"}})
	out, _ := ops(t, wild,
		map[string]any{"op": "http", "url": "http://localhost:" + port + "/ok"},
		map[string]any{"op": "http", "url": srv.URL + "/ok"},
	)
	wantPrefix(t, "localhost through a wildcard", out[0], "error denied:")
	if !strings.Contains(out[0], "loopback, private or link-local") {
		t.Errorf("denial %q does not say why", out[0])
	}
	wantPrefix(t, "127.0.0.1 through a wildcard", out[1], "error denied:")
	named := load(t, rt, "runtime/testdata/hostcalls", wasmbuild.Reactor, runtime.FunctionConfig{Name: "named", AllowedOutboundHosts: []string{"http://localhost:" + port}})
	out, _ = ops(t, named, map[string]any{"op": "http", "url": "http://localhost:" + port + "/ok"})
	wantPrefix(t, "localhost listed literally", out[0], "ok 200 hello")
}

// Under Config.DenyPrivateOutbound no function reaches a loopback address,
// even one its allow-list names literally, by address or by name; the
// denial names the switch. 100.64.0.0/10 (shared address space) counts
// as private whatever the switch.
func TestHostHTTPDenyPrivateOutbound(t *testing.T) {
	t.Parallel()
	srv := upstream(t)
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	rt, err := runtime.New(context.Background(), runtime.Config{CompilationCacheDir: compileCacheDir(t), DenyPrivateOutbound: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	f := load(t, rt, "runtime/testdata/hostcalls", wasmbuild.Reactor, runtime.FunctionConfig{
		AllowedOutboundHosts: []string{"http://127.0.0.1:*", "http://localhost:" + port}})
	out, res := ops(t, f,
		map[string]any{"op": "http", "url": srv.URL + "/ok"},
		map[string]any{"op": "http", "url": "http://localhost:" + port + "/ok"},
	)
	for i, what := range []string{"127.0.0.1 listed literally", "localhost listed literally"} {
		wantPrefix(t, what, out[i], "error denied:")
		if !strings.Contains(out[i], "--deny-private-outbound") {
			t.Errorf("%s: denial %q does not name the server's switch", what, out[i])
		}
	}
	if res.Host.HTTPBytesReceived != 0 {
		t.Errorf("received %d bytes from a refused peer", res.Host.HTTPBytesReceived)
	}

	open, _ := newRuntime(t)
	wild := load(t, open, "runtime/testdata/hostcalls", wasmbuild.Reactor, runtime.FunctionConfig{AllowedOutboundHosts: []string{"http://*:*"}})
	out, _ = ops(t, wild, map[string]any{"op": "http", "url": "http://100.64.0.1/"})
	wantPrefix(t, "100.64.0.1 through a wildcard", out[0], "error denied:")
	if !strings.Contains(out[0], "loopback, private or link-local") {
		t.Errorf("denial %q does not say why", out[0])
	}
}

// TestHostHTTPExactEntryNamesItsPort: an entry naming a private address
// for one port lets a function reach that address on that port only; on
// another port, through a wildcard entry, it is refused as if unlisted.
func TestHostHTTPExactEntryNamesItsPort(t *testing.T) {
	t.Parallel()
	srv := upstream(t)
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	rt, _ := newRuntime(t) // private addresses reachable when listed exactly
	other := "1"
	if port == other {
		other = "2"
	}
	for _, c := range []struct {
		list []string
		want string
	}{
		{[]string{"http://*:*", "https://127.0.0.1:" + other}, "error denied:"},
		{[]string{"http://*:*", "http://127.0.0.1"}, "error denied:"}, // port 80 by default
		{[]string{"http://*:*", "http://127.0.0.1:" + port}, "ok 200 hello"},
		{[]string{"http://*:*", "*://127.0.0.1:*"}, "ok 200 hello"},
	} {
		f := load(t, rt, "runtime/testdata/hostcalls", wasmbuild.Reactor, runtime.FunctionConfig{
			Name: "exact-" + strings.Join(c.list, "-"), AllowedOutboundHosts: c.list})
		out, _ := ops(t, f, map[string]any{"op": "http", "url": srv.URL + "/ok"})
		wantPrefix(t, fmt.Sprint(c.list), out[0], c.want)
	}
}

// TestHostHTTPPrivateOutboundNetworks: under DenyPrivateOutbound, the
// networks the operator names are reached at hosts listed literally, and
// only those: a special address outside them is refused naming them, one
// inside them reached through a wildcard is refused as without the
// setting, and metadata addresses inside them stay refused.
func TestHostHTTPPrivateOutboundNetworks(t *testing.T) {
	t.Parallel()
	srv := upstream(t)
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	denyBut := func(networks ...string) *runtime.Runtime {
		cfg := runtime.Config{CompilationCacheDir: compileCacheDir(t), DenyPrivateOutbound: true}
		for _, n := range networks {
			cfg.PrivateOutboundNetworks = append(cfg.PrivateOutboundNetworks, netip.MustParsePrefix(n))
		}
		rt, err := runtime.New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close(context.Background()) })
		return rt
	}
	// 127.0.0.1/8, not masked: the runtime masks it.
	loopback := denyBut("127.0.0.1/8", "fd12:3456::/48")
	f := load(t, loopback, "runtime/testdata/hostcalls", wasmbuild.Reactor, runtime.FunctionConfig{
		AllowedOutboundHosts: []string{"http://127.0.0.1:" + port, "http://*:*"}})
	out, _ := ops(t, f,
		map[string]any{"op": "http", "url": srv.URL + "/ok"},
		map[string]any{"op": "http", "url": "http://127.0.0.2:" + port + "/ok"},
	)
	wantPrefix(t, "127.0.0.1 listed literally, inside 127.0.0.0/8", out[0], "ok 200 hello")
	wantPrefix(t, "127.0.0.2 through a wildcard, inside 127.0.0.0/8", out[1], "error denied:")
	if !strings.Contains(out[1], "list it literally") {
		t.Errorf("127.0.0.2 through a wildcard: denial %q does not say how to reach it", out[1])
	}

	other := denyBut("10.1.2.0/24")
	f = load(t, other, "runtime/testdata/hostcalls", wasmbuild.Reactor, runtime.FunctionConfig{
		AllowedOutboundHosts: []string{"http://127.0.0.1:" + port}})
	out, res := ops(t, f, map[string]any{"op": "http", "url": srv.URL + "/ok"})
	wantPrefix(t, "127.0.0.1 listed literally, outside 10.1.2.0/24", out[0], "error denied:")
	if !strings.Contains(out[0], "--private-outbound-networks 10.1.2.0/24") {
		t.Errorf("denial %q does not name the networks the server allows", out[0])
	}
	if res.Host.HTTPBytesReceived != 0 {
		t.Errorf("received %d bytes from a refused peer", res.Host.HTTPBytesReceived)
	}

	metadata := denyBut("169.254.0.0/16", "100.64.0.0/10")
	f = load(t, metadata, "runtime/testdata/hostcalls", wasmbuild.Reactor, runtime.FunctionConfig{
		AllowedOutboundHosts: []string{"http://169.254.169.254", "http://100.100.100.200"}})
	out, _ = ops(t, f,
		map[string]any{"op": "http", "url": "http://169.254.169.254/latest/meta-data/"},
		map[string]any{"op": "http", "url": "http://100.100.100.200/latest/meta-data/"},
	)
	for i, what := range []string{"169.254.169.254 inside 169.254.0.0/16", "100.100.100.200 inside 100.64.0.0/10"} {
		wantPrefix(t, what, out[i], "error denied:")
		if !strings.Contains(out[i], "metadata") {
			t.Errorf("%s: denial %q does not say why", what, out[i])
		}
	}
}

// TestPrivateOutboundNetworksNeedDenyPrivate: New refuses networks to
// allow where nothing is denied, and a prefix that is not one.
func TestPrivateOutboundNetworksNeedDenyPrivate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  runtime.Config
		want string
	}{
		{"deny off", runtime.Config{PrivateOutboundNetworks: []netip.Prefix{netip.MustParsePrefix("10.1.2.0/24")}},
			"private outbound networks 10.1.2.0/24: they name what functions may still reach where private addresses are denied, and DenyPrivateOutbound is off"},
		{"invalid prefix", runtime.Config{DenyPrivateOutbound: true, PrivateOutboundNetworks: []netip.Prefix{{}}},
			`private outbound network "invalid Prefix": give a network such as 10.1.2.0/24`},
	} {
		tc.cfg.CompilationCacheDir = t.TempDir()
		rt, err := runtime.New(context.Background(), tc.cfg)
		if err == nil {
			rt.Close(context.Background())
			t.Errorf("%s: New succeeded", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestHostHTTPMetadataAddressesRefused: link-local and cloud metadata
// addresses are refused even when the allow-list names them literally
// and the runtime allows private addresses, so that a tenant's function
// cannot read the host's instance credentials.
func TestHostHTTPMetadataAddressesRefused(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntime(t) // private addresses allowed (no DenyPrivateOutbound)
	urls := []string{"http://169.254.169.254/latest/meta-data/", "http://169.254.170.2/v2/credentials",
		"http://[fd00:ec2::254]/latest/meta-data/", "http://100.100.100.200/latest/meta-data/", "http://168.63.129.16/machine?comp=goalstate",
		"http://[fe80::1]/"}
	var list []string
	var calls []map[string]any
	for _, u := range urls {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, "http://"+pu.Host)
		calls = append(calls, map[string]any{"op": "http", "url": u})
	}
	f := load(t, rt, "runtime/testdata/hostcalls", wasmbuild.Reactor, runtime.FunctionConfig{AllowedOutboundHosts: list})
	out, res := ops(t, f, calls...)
	for i, u := range urls {
		wantPrefix(t, u+" listed literally", out[i], "error denied:")
		if !strings.Contains(out[i], "metadata") {
			t.Errorf("%s: denial %q does not say why", u, out[i])
		}
	}
	if res.Host.HTTPBytesReceived != 0 {
		t.Errorf("received %d bytes from a refused peer", res.Host.HTTPBytesReceived)
	}

	// Through NAT64, the IPv4 address inside is what is checked:
	// 169.254.169.254 and 10.0.0.1 behind a wildcard, in the well-known
	// prefix and in the local-use one (at /96, /48 and /64).
	wild := load(t, rt, "runtime/testdata/hostcalls", wasmbuild.Reactor, runtime.FunctionConfig{Name: "wild",
		AllowedOutboundHosts: []string{"http://*:*"}})
	nat := []struct{ addr, want string }{
		{"64:ff9b::a9fe:a9fe", "metadata"},
		{"64:ff9b::a00:1", "loopback, private"},
		{"64:ff9b:1::a9fe:a9fe", "metadata"},
		{"64:ff9b:1:a9fe:a9:fe00::", "metadata"},
		{"64:ff9b:1::a:0:100:0", "loopback, private"},
	}
	calls = nil
	for _, n := range nat {
		calls = append(calls, map[string]any{"op": "http", "url": "http://[" + n.addr + "]/"})
	}
	out, _ = ops(t, wild, calls...)
	for i, n := range nat {
		wantPrefix(t, "NAT64 address "+n.addr, out[i], "error denied:")
		if !strings.Contains(out[i], n.want) {
			t.Errorf("NAT64 address %s: denial %q does not say %q", n.addr, out[i], n.want)
		}
	}
}

// TestHostHTTPOwnNAT64Prefix: with the network's own NAT64 prefix named
// (Config.NAT64Prefixes), an address in it is checked as the IPv4 address
// inside, behind a wildcard; New refuses a prefix of a length RFC 6052
// does not define, naming it.
func TestHostHTTPOwnNAT64Prefix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := runtime.New(ctx, runtime.Config{NAT64Prefixes: []netip.Prefix{netip.MustParsePrefix("2001:db8::/33")}}); err == nil ||
		!strings.Contains(err.Error(), "NAT64 prefix 2001:db8::/33: give an IPv6 prefix of length /32, /40, /48, /56, /64 or /96") {
		t.Fatalf("New with a /33 NAT64 prefix: %v", err)
	}
	rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: compileCacheDir(t),
		NAT64Prefixes: []netip.Prefix{netip.MustParsePrefix("2001:db8:64::/96")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	wild := load(t, rt, "runtime/testdata/hostcalls", wasmbuild.Reactor, runtime.FunctionConfig{AllowedOutboundHosts: []string{"http://*:*"}})
	out, _ := ops(t, wild, map[string]any{"op": "http", "url": "http://[2001:db8:64::a9fe:a9fe]/"},
		map[string]any{"op": "http", "url": "http://[2001:db8:64::a00:1]/"})
	for i, want := range []string{"169.254.169.254, a link-local or cloud metadata address", "reaches 10.0.0.1 through NAT64, a loopback, private"} {
		wantPrefix(t, "address in the network's NAT64 prefix", out[i], "error denied:")
		if !strings.Contains(out[i], want) {
			t.Errorf("denial %q does not say %q", out[i], want)
		}
	}
}

func TestHostHTTPLimits(t *testing.T) {
	t.Parallel()
	srv := upstream(t)
	rt, _ := newRuntime(t)
	f := load(t, rt, "runtime/testdata/hostcalls", wasmbuild.Reactor, runtime.FunctionConfig{
		AllowedOutboundHosts: []string{"http://127.0.0.1:*"}, HTTPRequestTimeout: 300 * time.Millisecond,
	})
	start := time.Now()
	out, _ := ops(t, f, map[string]any{"op": "http", "url": srv.URL + "/sleep"})
	wantPrefix(t, "slow upstream", out[0], "error failed: http_request GET "+srv.URL+"/sleep: timed out")
	if d := time.Since(start); d > 30*time.Second { // generous: machines under load (and -race) are slow
		t.Errorf("timed out request took %s", d)
	}
	// The size and count caps, with no short request timeout: a loaded
	// machine may take longer than 300 ms to serve a loopback request.
	f = load(t, rt, "runtime/testdata/hostcalls", wasmbuild.Reactor, runtime.FunctionConfig{Name: "capped",
		AllowedOutboundHosts: []string{"http://127.0.0.1:*"}, MaxHTTPResponseBytes: 1000, MaxHTTPRequests: 5,
	})
	out, _ = ops(t, f,
		map[string]any{"op": "http", "url": srv.URL + "/big?n=1000"},
		map[string]any{"op": "http", "url": srv.URL + "/big?n=1001"},
	)
	wantPrefix(t, "body at the cap", out[0], "ok 200 xxx")
	wantPrefix(t, "body over the cap", out[1], "error limit reached: http_request GET")
	// Headers are capped apart (they are not the body) and counted as
	// received.
	out, res := ops(t, f,
		map[string]any{"op": "http", "url": srv.URL + "/bigheaders?n=30000"},
		map[string]any{"op": "http", "url": fmt.Sprintf("%s/bigheaders?n=%d", srv.URL, runtime.MaxHTTPResponseHeaderBytes)},
	)
	wantPrefix(t, "headers within their cap", out[0], "ok 200 ok")
	wantPrefix(t, "headers over their cap", out[1], "error limit reached: http_request GET")
	if !strings.Contains(out[1], fmt.Sprintf("response headers over the limit of %d bytes", runtime.MaxHTTPResponseHeaderBytes)) {
		t.Errorf("headers over their cap: %q does not say which limit", out[1])
	}
	if res.Host.HTTPBytesReceived < 30000 {
		t.Errorf("received %d bytes, want the 30,000 of the first response's headers counted", res.Host.HTTPBytesReceived)
	}
	out, res = ops(t, f, map[string]any{"op": "http", "url": srv.URL + "/ok", "n": 7})
	wantPrefix(t, "request count", out[0], "after 5: error limit reached: http_request: over the limit of 5 requests")
	if res.Host.HTTPRequests != 5 {
		t.Errorf("requests %d, want 5", res.Host.HTTPRequests)
	}

	// The batch's deadline bounds a request too: the batch times out.
	short := load(t, rt, "runtime/testdata/hostcalls", wasmbuild.Reactor, runtime.FunctionConfig{Name: "short",
		AllowedOutboundHosts: []string{"http://127.0.0.1:*"}, Timeout: 500 * time.Millisecond})
	start = time.Now()
	res = invoke(t, short, batch(`{"op":"http","url":"`+srv.URL+`/sleep"}`))
	wantFailure(t, res, runtime.FailureTimeout, "timeout")
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("batch with a slow request took %s", d)
	}
}

func TestHostDeniedByDefault(t *testing.T) {
	t.Parallel()
	srv := upstream(t)
	rt, _ := newRuntime(t)
	f := load(t, rt, "runtime/testdata/hostcalls", wasmbuild.Command, runtime.FunctionConfig{})
	out, _ := ops(t, f,
		map[string]any{"op": "http", "url": srv.URL + "/ok"},
		map[string]any{"op": "get", "store": "sessions", "key": "k"},
	)
	wantPrefix(t, "http", out[0], "error denied: http_request: http://127.0.0.1:")
	wantPrefix(t, "kv", out[1], `error denied: kv_open: store "sessions" is not listed`)
}

func TestLoadRejectsBadOutboundHost(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"api.example.com", "ftp://x", "https://x/path", "https://x:99999", "https://a*b"} {
		if err := runtime.ValidateOutboundHost(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, good := range []string{"https://api.example.com", "http://127.0.0.1:*", "*://*.example.com:8443", "https://*", "http://[::1]:8080"} {
		if err := runtime.ValidateOutboundHost(good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}

// memKV is an in-memory runtime.KV (package kv tests the Postgres one).
type memKV struct {
	mu sync.Mutex
	m  map[string]string
}

func (k *memKV) Get(_ context.Context, store string, key []byte) ([]byte, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[store+"/"+string(key)]
	return []byte(v), ok, nil
}

func (k *memKV) Set(_ context.Context, store string, key, value []byte, _ time.Duration) error {
	if store == "full" {
		return fmt.Errorf("the account's stores are at their quota: %w", runtime.ErrKVLimit)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[store+"/"+string(key)] = string(value)
	return nil
}

func (k *memKV) Delete(_ context.Context, store string, key []byte) (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.m[store+"/"+string(key)]
	delete(k.m, store+"/"+string(key))
	return ok, nil
}

func (k *memKV) Increment(_ context.Context, store string, key []byte, delta int64) (int64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	n, err := strconv.ParseInt(k.m[store+"/"+string(key)]+"0", 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not an integer: %w", runtime.ErrKVInvalid)
	}
	n = n/10 + delta
	k.m[store+"/"+string(key)] = strconv.FormatInt(n, 10)
	return n, nil
}

func (k *memKV) CompareAndSet(_ context.Context, store string, key, old, value []byte, _ time.Duration) (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	cur, ok := k.m[store+"/"+string(key)]
	if old == nil && ok || old != nil && (!ok || cur != string(old)) {
		return false, nil
	}
	k.m[store+"/"+string(key)] = string(value)
	return true, nil
}

func TestHostKV(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, mode wasmbuild.Mode) {
		rt, _ := newRuntime(t)
		f := load(t, rt, "runtime/testdata/hostcalls", mode, runtime.FunctionConfig{Stores: []string{"counts", "sessions", "full"},
			KV: &memKV{m: map[string]string{}}, MaxKVValueBytes: 100})
		old := "a"
		out, res := ops(t, f,
			map[string]any{"op": "get", "store": "sessions", "key": "k"},
			map[string]any{"op": "set", "store": "sessions", "key": "k", "value": "a"},
			map[string]any{"op": "get", "store": "sessions", "key": "k"},
			map[string]any{"op": "cas", "store": "sessions", "key": "k", "value": "b"},
			map[string]any{"op": "cas", "store": "sessions", "key": "k", "old": old, "value": "b"},
			map[string]any{"op": "get", "store": "sessions", "key": "k"},
			map[string]any{"op": "delete", "store": "sessions", "key": "k"},
			map[string]any{"op": "delete", "store": "sessions", "key": "k"},
			map[string]any{"op": "incr", "store": "counts", "key": "n", "delta": 2, "n": 3},
			map[string]any{"op": "incr", "store": "sessions", "key": "n", "delta": -1},
			map[string]any{"op": "get", "store": "other", "key": "k"},
			map[string]any{"op": "bigvalue", "store": "sessions", "key": "big", "n": 101},
			map[string]any{"op": "set", "store": "sessions", "key": "", "value": "x"},
			map[string]any{"op": "set", "store": "full", "key": "k", "value": "x"},
		)
		want := []string{"error not found: kv_get sessions: key not found", "ok", "ok a",
			"error conflict: kv_compare_and_set sessions: the key holds another value", "ok", "ok b", "ok",
			"error not found: kv_delete sessions: key not found", "ok 6", "ok -1",
			`error denied: kv_open: store "other" is not listed in the function's stores ["counts" "sessions" "full"]`,
			"error limit reached: kv_set: value of 101 bytes is over the limit of 100",
			"error invalid: kv_set: key of 0 bytes: use 1 to 1024 bytes",
			"error limit reached: kv_set full: the account's stores are at their quota: limit"}
		for i := range want {
			if out[i] != want[i] {
				t.Errorf("op %d: %q, want %q", i+1, out[i], want[i])
			}
		}
		if res.Host.KVCalls < 12 {
			t.Errorf("kv calls %d", res.Host.KVCalls)
		}
	})
}
