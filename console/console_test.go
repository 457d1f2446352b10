package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/console"
)

func get(t *testing.T, h http.Handler, method, target string, hdr ...string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return string(b)
}

func TestHandlerServesAssets(t *testing.T) {
	t.Parallel()
	h := console.Handler()
	for _, tc := range []struct {
		path, contentType, contains string
	}{
		{"/console/", "text/html; charset=utf-8", `<script type="module" src="/console/assets/js/app.js">`},
		{"/console/queues/orders", "text/html; charset=utf-8", "<title>Sluice console</title>"},
		{"/console/assets/app.css", "text/css; charset=utf-8", ".topbar"},
		{"/console/assets/js/app.js", "text/javascript; charset=utf-8", "import"},
		{"/console/assets/js/api.js", "text/javascript; charset=utf-8", "Bearer "},
		{"/console/assets/js/queues.js", "text/javascript; charset=utf-8", "live"},
		{"/console/assets/js/queue.js", "text/javascript; charset=utf-8", "redrive"},
		{"/console/assets/js/functions.js", "text/javascript; charset=utf-8", "rollback"},
		{"/console/assets/js/invocations.js", "text/javascript; charset=utf-8", "before_id"},
		{"/console/assets/js/chart.js", "text/javascript; charset=utf-8", "polyline"},
		{"/console/assets/favicon.svg", "image/svg+xml", "<svg"},
	} {
		res := get(t, h, "GET", tc.path)
		if res.StatusCode != 200 {
			t.Errorf("GET %s: status %d, want 200", tc.path, res.StatusCode)
			continue
		}
		if got := res.Header.Get("Content-Type"); got != tc.contentType {
			t.Errorf("GET %s: Content-Type %q, want %q", tc.path, got, tc.contentType)
		}
		if got := res.Header.Get("Cache-Control"); got != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q, want no-cache", tc.path, got)
		}
		if res.Header.Get("ETag") == "" {
			t.Errorf("GET %s: no ETag", tc.path)
		}
		if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q", tc.path, got)
		}
		if !strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("GET %s: Content-Security-Policy %q", tc.path, res.Header.Get("Content-Security-Policy"))
		}
		if b := body(t, res); !strings.Contains(b, tc.contains) {
			t.Errorf("GET %s: body does not contain %q", tc.path, tc.contains)
		}
	}
}

func TestHandlerRevalidates(t *testing.T) {
	t.Parallel()
	h := console.Handler()
	etag := get(t, h, "GET", "/console/assets/app.css").Header.Get("ETag")
	res := get(t, h, "GET", "/console/assets/app.css", "If-None-Match", etag)
	if res.StatusCode != http.StatusNotModified {
		t.Fatalf("conditional GET: status %d, want 304", res.StatusCode)
	}
	if other := get(t, h, "GET", "/console/assets/js/app.js").Header.Get("ETag"); other == etag {
		t.Fatalf("two different files share the ETag %s", etag)
	}
}

func TestHandlerRefuses(t *testing.T) {
	t.Parallel()
	h := console.Handler()
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/console/assets/missing.js", 404},
		{"GET", "/console/assets/index.html", 404},
		{"GET", "/console/assets/js/", 404},
		{"POST", "/console/", 405},
		{"DELETE", "/console/assets/app.css", 405},
	} {
		res := get(t, h, tc.method, tc.path)
		if res.StatusCode != tc.status {
			t.Errorf("%s %s: status %d, want %d", tc.method, tc.path, res.StatusCode, tc.status)
		}
		if tc.status == 405 && res.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q", tc.method, tc.path, res.Header.Get("Allow"))
		}
	}
	if res := get(t, h, "HEAD", "/console/"); res.StatusCode != 200 || body(t, res) != "" {
		t.Errorf("HEAD /console/: status %d", res.StatusCode)
	}
}

func TestMount(t *testing.T) {
	t.Parallel()
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})
	h := console.Mount(next)
	for path, want := range map[string]int{
		"/console/":                 200,
		"/console/assets/app.css":   200,
		"/console":                  http.StatusMovedPermanently,
		"/consoles":                 http.StatusTeapot,
		"/v1/accounts/1/queues":     http.StatusTeapot,
		"/000000000001/console/dlq": http.StatusTeapot,
	} {
		res := get(t, h, "GET", path)
		if res.StatusCode != want {
			t.Errorf("GET %s: status %d, want %d", path, res.StatusCode, want)
		}
		if want == http.StatusMovedPermanently && res.Header.Get("Location") != "/console/" {
			t.Errorf("GET %s: Location %q, want /console/", path, res.Header.Get("Location"))
		}
	}
}
