// Command status-check calls an HTTP API through the host (sdkhttp.Client)
// and counts the answers in a key-value store (sdk.Store). Each message may
// name the URL to check ({"url": "..."}); the default is $STATUS_URL. Its
// manifest must allow the URL (allowed_outbound_hosts) and the store
// (stores: [counts]):
//
//	status-check:
//	  build: ./status-check
//	  reactor: true
//	  env: {STATUS_URL: "http://127.0.0.1:8080/healthz"}
//	  allowed_outbound_hosts: ["http://127.0.0.1:*"]
//	  stores: [counts]
//
// Then `sluice kv list counts` shows how many checks ran and their status
// codes.
package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdkhttp"
)

func main() {
	sdk.Handle(func(ctx sdk.Context, b sdk.Batch) sdk.Result {
		var res sdk.Result
		client := sdkhttp.Client()
		counts := sdk.Store("counts")
		for _, m := range b.Messages {
			var msg struct {
				URL string `json:"url"`
			}
			_ = m.Decode(&msg) // any body will do: the URL is optional
			url := msg.URL
			if url == "" {
				url = os.Getenv("STATUS_URL")
			}
			if url == "" {
				res.Permanent(m.ID, fmt.Errorf("no url in the message and STATUS_URL is unset"))
				continue
			}
			resp, err := client.Get(url)
			if err != nil {
				res.Retry(m.ID, 5*time.Second, err) // denied, unreachable, timed out
				continue
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
			resp.Body.Close()
			n, err := counts.Increment("checks", 1)
			if err == nil {
				_, err = counts.Increment("status:"+strconv.Itoa(resp.StatusCode), 1)
			}
			if err != nil {
				res.Retry(m.ID, 5*time.Second, err)
				continue
			}
			ctx.Log("checked", "url", url, "status", resp.StatusCode, "body", string(body), "checks", n)
			if resp.StatusCode >= 500 {
				res.Retry(m.ID, 5*time.Second, fmt.Errorf("%s answered %s", url, resp.Status))
			}
		}
		return res
	})
}
