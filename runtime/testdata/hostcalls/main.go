// Command hostcalls exercises the host imports of module "sluice" through
// the SDK. Every message names one operation; its result comes back as the
// message's failure text ("ok ..." or "error <kind>: <message>").
package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdkhttp"
)

type op struct {
	Op     string  `json:"op"`
	URL    string  `json:"url"`
	Method string  `json:"method"`
	Body   string  `json:"body"`
	N      int     `json:"n"`
	Store  string  `json:"store"`
	Key    string  `json:"key"`
	Value  string  `json:"value"`
	Old    *string `json:"old"`
	TTLMS  int64   `json:"ttl_ms"`
	Delta  int64   `json:"delta"`
}

func describe(err error) string {
	for _, s := range []error{sdk.ErrDenied, sdk.ErrInvalid, sdk.ErrLimit, sdk.ErrFailed, sdk.ErrNotFound, sdk.ErrConflict} {
		if errors.Is(err, s) {
			return "error " + s.Error() + ": " + err.Error()
		}
	}
	return "error other: " + err.Error()
}

func run(o op) string {
	switch o.Op {
	case "http":
		n := max(o.N, 1)
		var last string
		for i := 0; i < n; i++ {
			var body io.Reader
			if o.Body != "" {
				body = strings.NewReader(o.Body)
			}
			req, err := http.NewRequest(max(o.Method, "GET"), o.URL, body)
			if err != nil {
				return describe(err)
			}
			resp, err := sdkhttp.Client().Do(req)
			if ue := (*url.Error)(nil); errors.As(err, &ue) {
				err = ue.Err // drop net/http's "Get <url>: " prefix
			}
			if err != nil && i == 0 {
				return describe(err)
			}
			if err != nil {
				return fmt.Sprintf("after %d: %s", i, describe(err))
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = fmt.Sprintf("ok %d %s", resp.StatusCode, b)
		}
		return last
	case "get":
		v, err := sdk.Store(o.Store).Get(o.Key)
		if err != nil {
			return describe(err)
		}
		return "ok " + string(v)
	case "set":
		if err := sdk.Store(o.Store).Set(o.Key, []byte(o.Value), time.Duration(o.TTLMS)*time.Millisecond); err != nil {
			return describe(err)
		}
		return "ok"
	case "delete":
		if err := sdk.Store(o.Store).Delete(o.Key); err != nil {
			return describe(err)
		}
		return "ok"
	case "incr":
		s := sdk.Store(o.Store)
		var v int64
		for i := 0; i < max(o.N, 1); i++ {
			var err error
			if v, err = s.Increment(o.Key, o.Delta); err != nil {
				return describe(err)
			}
		}
		return fmt.Sprintf("ok %d", v)
	case "cas":
		var old []byte
		if o.Old != nil {
			old = []byte(*o.Old)
		}
		if err := sdk.Store(o.Store).CompareAndSet(o.Key, old, []byte(o.Value), time.Duration(o.TTLMS)*time.Millisecond); err != nil {
			return describe(err)
		}
		return "ok"
	case "bigvalue":
		if err := sdk.Store(o.Store).Set(o.Key, make([]byte, o.N), 0); err != nil {
			return describe(err)
		}
		return "ok"
	}
	return "unknown op " + o.Op
}

func main() {
	sdk.Handle(func(ctx sdk.Context, b sdk.Batch) sdk.Result {
		var res sdk.Result
		for _, m := range b.Messages {
			var o op
			if err := m.Decode(&o); err != nil {
				res.Permanent(m.ID, err)
				continue
			}
			res.Retry(m.ID, 0, errors.New(run(o)))
		}
		return res
	})
}
