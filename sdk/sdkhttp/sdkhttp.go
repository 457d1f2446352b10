// Package sdkhttp gives a Sluice function an *http.Client whose requests go
// through the host's http_request import (Function ABI v1.1), so ordinary
// net/http code, and libraries that take an *http.Client, work inside a
// function:
//
//	resp, err := sdkhttp.Client().Get("https://api.example.com/v1/status")
//
// Only the URLs the function's manifest lists in allowed_outbound_hosts can
// be called; the host follows redirects (to allowed URLs only) and caps the
// time, size and count of requests. Failed calls return the *sdk.HostError
// of sdk.Fetch, wrapping sdk.ErrDenied, sdk.ErrLimit and the others.
//
// It is a package of its own because net/http adds about 1.8 MB to a
// module (and to its compile time and starting memory); functions that make
// no HTTP calls do not link it.
package sdkhttp

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/sluicehq/sluice/sdk"
)

// Client returns an http.Client over Transport.
func Client() *http.Client {
	return &http.Client{Transport: Transport{}}
}

// Transport is an http.RoundTripper over sdk.Fetch.
type Transport struct{}

// RoundTrip implements http.RoundTripper.
func (Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := sdk.HTTPRequest{Method: req.Method, URL: req.URL.String(), Headers: req.Header}
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("sluice http: read request body: %w", err)
		}
		r.Body = b
	}
	resp, err := sdk.Fetch(r)
	if err != nil {
		return nil, err
	}
	return &http.Response{
		Status:        strconv.Itoa(resp.Status) + " " + http.StatusText(resp.Status),
		StatusCode:    resp.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header(resp.Headers),
		Body:          io.NopCloser(bytes.NewReader(resp.Body)),
		ContentLength: int64(len(resp.Body)),
		Request:       req,
	}, nil
}
