package console

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Prefix is the path the console is served under.
const Prefix = "/console/"

// asset is one embedded file, ready to serve.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// console serves the embedded assets.
type console struct {
	files map[string]asset // by path under assets/, e.g. "js/app.js"
	index asset
}

// contentTypes maps the extensions the console ships to their types, so
// that serving does not depend on the host's MIME tables.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".ico":  "image/x-icon",
	".png":  "image/png",
}

// securityHeaders go on every console response. The console loads only its
// own files and talks only to its own origin.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options":  "nosniff",
	"Referrer-Policy":         "no-referrer",
	"X-Frame-Options":         "DENY",
}

// Handler serves the console under /console/: the embedded files under
// /console/assets/, and index.html for /console/ and every other path under
// it (the console routes in the browser). Unknown files under
// /console/assets/ are 404. Responses carry an ETag and
// "Cache-Control: no-cache", so browsers revalidate and pick up a new
// binary's assets at once. Only GET and HEAD are allowed.
func Handler() http.Handler {
	c := &console{files: map[string]asset{}}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			return fmt.Errorf("console: asset %s: no content type for extension %q", p, path.Ext(p))
		}
		sum := sha256.Sum256(b)
		c.files[strings.TrimPrefix(p, "assets/")] = asset{body: b, contentType: ct,
			etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`}
		return nil
	})
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	idx, ok := c.files["index.html"]
	if !ok {
		panic("console: assets/index.html is missing")
	}
	c.index = idx
	return c
}

// Mount returns a handler that serves the console for /console and paths
// under /console/, and passes every other request to next.
func Mount(next http.Handler) http.Handler {
	h := Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/console" || strings.HasPrefix(r.URL.Path, Prefix) {
			h.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (c *console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for k, v := range securityHeaders {
		w.Header().Set(k, v)
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method "+r.Method+" is not allowed on the console; allowed: GET, HEAD", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == "/console" {
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	a := c.index
	if name, isAsset := strings.CutPrefix(rest, "assets/"); isAsset {
		f, found := c.files[name]
		if !found || name == "index.html" {
			http.Error(w, "console asset "+path.Clean("/"+name)+" not found", http.StatusNotFound)
			return
		}
		a = f
	}
	w.Header().Set("Content-Type", a.contentType)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", a.etag)
	http.ServeContent(w, r, "", time.Time{}, strings.NewReader(string(a.body)))
}
