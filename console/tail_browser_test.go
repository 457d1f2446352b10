package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/client"
)

// The function page tails the function's logs live: an invocation made
// after the page opened shows with its stderr, trigger and id.
func TestBrowserFunctionLiveTail(t *testing.T) {
	t.Parallel()
	ts, account, token, c := setup(t)
	deploy(t, c, "tally", buildExample(t, "flaky"), "live", "FLAKY_RETRY_SECONDS=0")

	p := newPage(t)
	p.signIn(ts.URL, account, token)
	p.do("function page", chromedp.Navigate(ts.URL+"/console/#/functions/tally"), chromedp.WaitVisible(chromedp.CSS("#function-tail")))
	p.wait("the tail connected", `(document.querySelector('#function-tail-state') || {}).dataset?.state === "live"`)

	res, err := c.Functions.Invoke(context.Background(), "tally", client.InvokeOptions{
		Bodies: []json.RawMessage{json.RawMessage(`{"n":1}`), json.RawMessage(`{"fail_until_attempt":2}`)}})
	if err != nil {
		t.Fatal(err)
	}
	sel := fmt.Sprintf(`#function-tail div[data-invocation="%d"]`, res.InvocationID)
	p.wait("the invocation in the tail", fmt.Sprintf(`document.querySelectorAll(%q).length >= 2`, sel))
	got := p.eval(fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map((d) => d.textContent).join("\n")`, sel))
	id := fmt.Sprintf(" invoke #%d ", res.InvocationID)
	if !strings.Contains(got, id) || !strings.Contains(got, "processed") || !strings.Contains(got, "partial_failure (item_failures)") {
		t.Errorf("tail lines of invocation %d:\n%s\nwant its stderr and outcome, each line naming%q", res.InvocationID, got, id)
	}
	p.shot("function-live-tail")
}
