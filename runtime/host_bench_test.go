package runtime_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/runtime"
)

// requestsPerOp is how many GETs one benchmark op makes: one invocation
// of the guest making that many through sdkhttp.Client(), or as many from
// Go on the host, so the invocation's own cost is spread thin.
const requestsPerOp = 50

func benchUpstream(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("hello"))
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkHTTPFromGuest: a reactor calls a local server through the
// http_request host import (JSON request and response documents, base64
// bodies, allow-list and dial checks); ns/request is per GET.
func BenchmarkHTTPFromGuest(b *testing.B) {
	srv := benchUpstream(b)
	rt, _ := newRuntime(b)
	f := load(b, rt, "runtime/testdata/hostcalls", wasmbuild.Reactor, runtime.FunctionConfig{
		AllowedOutboundHosts: []string{"http://127.0.0.1:*"}, MaxHTTPRequests: requestsPerOp})
	inv := batch(fmt.Sprintf(`{"op":"http","url":%q,"n":%d}`, srv.URL+"/ok", requestsPerOp))
	if res := invoke(b, f, inv); res.Messages[0].Error != "ok 200 hello" {
		b.Fatalf("guest: %q", res.Messages[0].Error)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		invoke(b, f, inv)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*requestsPerOp), "ns/request")
}

// BenchmarkHTTPFromHost is the same GETs from Go on the host, with a
// keep-alive client: the floor the guest's calls are measured against.
func BenchmarkHTTPFromHost(b *testing.B) {
	srv := benchUpstream(b)
	client := &http.Client{Transport: &http.Transport{}}
	b.Cleanup(client.CloseIdleConnections)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for range requestsPerOp {
			resp, err := client.Get(srv.URL + "/ok")
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*requestsPerOp), "ns/request")
}
