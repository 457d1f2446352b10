package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/client/clienttest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/pgqueue"
)

// chromiumPath is Debian's chromium; scripts/test installs it when missing.
const chromiumPath = "/usr/bin/chromium"

// TestMain stops the browser the tests shared, if any started it.
func TestMain(m *testing.M) {
	code := m.Run()
	shared.stop()
	os.Exit(code)
}

// shared is the one headless chromium of the package's browser tests,
// started by the first test that needs it. Starting chromium costs ~1.8 s
// of CPU, and the tests run side by side: each gets a tab of its own in a
// browser context of its own (newBrowser), which shares no cookies,
// storage or cache with the others.
var shared sharedBrowser

type sharedBrowser struct {
	once    sync.Once
	ctx     context.Context // the browser's first tab; its children open new ones
	err     error
	dataDir string
	stopAll []context.CancelFunc
}

// start starts chromium once; every later call returns the first call's
// outcome.
func (b *sharedBrowser) start() (context.Context, error) {
	b.once.Do(func() {
		if _, err := os.Stat(chromiumPath); err != nil {
			b.err = fmt.Errorf("console browser tests need chromium at %s (%v): install it with `apt-get update && apt-get install -y chromium` (scripts/test does it when run as root)", chromiumPath, err)
			return
		}
		dir, err := os.MkdirTemp("", "sluice-console-chromium-")
		if err != nil {
			b.err = fmt.Errorf("chromium profile folder: %w", err)
			return
		}
		b.dataDir = dir
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(chromiumPath),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.UserDataDir(dir),
			chromedp.WindowSize(1280, 900),
		}
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(allocCtx)
		b.stopAll = []context.CancelFunc{cancel, cancelAlloc}
		if err := chromedp.Do(ctx); err != nil { // starts the browser, without a timeout
			b.err = fmt.Errorf("start chromium: %w", err)
			return
		}
		b.ctx = ctx
	})
	return b.ctx, b.err
}

// stop stops chromium, if it started, and removes its profile.
func (b *sharedBrowser) stop() {
	for _, cancel := range b.stopAll {
		cancel()
	}
	if b.dataDir != "" {
		os.RemoveAll(b.dataDir)
	}
}

// newBrowser returns a chromedp context for a new tab of the shared
// chromium, in a browser context of its own (a fresh profile: no cookies
// or storage of other tests), closed at cleanup.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	browser, err := shared.start()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // opens the tab
		t.Fatalf("open a chromium tab: %v", err)
	}
	// An uncaught exception in the console's JavaScript fails the test.
	var mu sync.Mutex
	var exceptions []string
	go func() {
		for ev, err := range chromedp.Events(ctx, cdpruntime.ExceptionThrown) {
			if err != nil {
				return
			}
			d := ev.ExceptionDetails
			msg := fmt.Sprintf("%s at %s:%d:%d", d.Text, d.URL, d.LineNumber+1, d.ColumnNumber+1)
			if d.Exception != nil {
				msg += ": " + d.Exception.Description
			}
			mu.Lock()
			exceptions = append(exceptions, msg)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { // runs before the tab closes
		mu.Lock()
		defer mu.Unlock()
		for _, e := range exceptions {
			t.Errorf("uncaught JavaScript exception: %s", e)
		}
	})
	return ctx
}

// artifacts is the folder for this test's screenshots: under
// $SLUICE_ARTIFACTS when set, else a temporary folder that is kept.
func artifacts(t *testing.T) string {
	t.Helper()
	var dir string
	var err error
	if base := os.Getenv("SLUICE_ARTIFACTS"); base != "" {
		dir = filepath.Join(base, "console", t.Name())
		err = os.MkdirAll(dir, 0o755)
	} else {
		dir, err = os.MkdirTemp("", "sluice-console-"+t.Name()+"-")
	}
	if err != nil {
		t.Fatalf("artifacts folder: %v", err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// stepTimeout bounds each step of a page (an action and what it waits
// for, an evaluation, a screenshot), not a whole test: on a loaded machine
// a flow of a hundred steps takes long without any one step hanging
// (TestBrowserQueuesAndMessages ran out of a 2-minute deadline for the
// whole page in a run that compiled modules beside it).
const stepTimeout = time.Minute

// page drives one tab, each step with a deadline (stepTimeout), and names
// each step in failures.
type page struct {
	t   *testing.T
	ctx context.Context
	dir string
	n   int
}

func (p *page) do(step string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.shot("failed")
		p.t.Fatalf("%s: %v", step, err)
	}
}

// confirm clicks sel and confirms the dialog it opens.
func (p *page) confirm(step, sel string) {
	p.t.Helper()
	p.do(step, chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS("#confirm-ok")), chromedp.Click(chromedp.CSS("#confirm-ok")))
}

// openQueue clicks queue name in the list once its live counts are in:
// the list renders the names first and re-renders every row when the
// counts arrive, and a click between the two finds its link gone ("Could
// not find node with given id").
func (p *page) openQueue(step, name, waitSel string) {
	p.t.Helper()
	p.wait(step+": counts listed", fmt.Sprintf(`document.getElementById("stats-updated").textContent.startsWith("Counts as of") && !document.getElementById("stats-updated").textContent.includes("refreshing") && !!document.querySelector('tr[data-queue=%q] a')`, name))
	p.do(step, chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-queue=%q] a`, name))), chromedp.WaitVisible(chromedp.CSS(waitSel)))
	// A click lands where the page was when chromedp measured it: wait for
	// the header's counts so that nothing moves under the next one.
	p.wait(step+": header loaded", `!!document.getElementById("queue-counts")`)
}

// wait polls a JavaScript predicate until it holds.
func (p *page) wait(step, predicate string) {
	p.t.Helper()
	p.do(step, chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingInterval(100*time.Millisecond),
		chromedp.WithPollingTimeout(0))) // the step's deadline applies
}

func (p *page) eval(js string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// fill sets an input's or textarea's value as a paste would (one input
// event).
func (p *page) fill(sel, value string) {
	p.t.Helper()
	js := fmt.Sprintf(`(() => { const el = document.querySelector(%q); el.value = %q; el.dispatchEvent(new Event("input", {bubbles: true})); return ""; })()`, sel, value)
	p.eval(js)
}

func (p *page) text(sel string) string {
	p.t.Helper()
	return p.eval(fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel))
}

func (p *page) shot(name string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Logf("screenshot %s: %v", name, err)
		return
	}
	p.n++
	path := filepath.Join(p.dir, fmt.Sprintf("%02d-%s.png", p.n, name))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		p.t.Errorf("save screenshot: %v", err)
	}
}

func newPage(t *testing.T) *page {
	return &page{t: t, ctx: newBrowser(t), dir: artifacts(t)}
}

// setup starts a server (the console mounted by server.Handler, the
// trigger engine running) and returns it, a fresh account, a key of it
// with every scope (mq:*, functions:deploy) as ID:SECRET and a Go client
// with that key (what another client of the API does).
func setup(t *testing.T) (srv *clienttest.Server, account, token string, c *client.Client) {
	t.Helper()
	srv = clienttest.NewWith(t, clienttest.Options{CompiledCacheDir: compiledCache(t)})
	account = newAccount()
	token = srv.Key(t, account, clienttest.AllScopes, nil)
	c, err := client.Config{Endpoint: srv.URL, Key: token, Account: account}.Client()
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return srv, account, token, c
}

// compiledCache is where every test server keeps compiled WASM, across
// runs and with the other packages' tests: compiling a Go module takes
// seconds (half a minute with wazero race-instrumented).
func compiledCache(t *testing.T) string {
	t.Helper()
	dir, err := wasmbuild.CompiledCacheDir()
	if err != nil {
		t.Fatalf("compiled code cache: %v", err)
	}
	return dir
}

// createQueue creates queue name with max_receive_count maxReceives.
func createQueue(t *testing.T, c *client.Client, name string, maxReceives int) {
	t.Helper()
	if _, err := c.Queues.Create(context.Background(), name, client.QueueSettings{MaxReceiveCount: &maxReceives}); err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
}

func newAccount() string { return fmt.Sprintf("%012d", rand.Int64N(1e12)) }

// signIn opens the console and signs in.
func (p *page) signIn(url, account, token string) {
	p.t.Helper()
	p.do("open console", chromedp.Navigate(url+"/console/"), chromedp.WaitVisible(chromedp.CSS("#signin-form")))
	p.fill("#account", account)
	p.fill("#key", token)
	p.do("sign in", chromedp.Click(chromedp.CSS("#signin")), chromedp.WaitVisible(chromedp.CSS("table#queues")))
}

func TestBrowserQueuesAndMessages(t *testing.T) {
	t.Parallel()
	ts, account, token, c := setup(t)
	id, secret, _ := strings.Cut(token, ":")
	ctx := context.Background()
	p := newPage(t)

	// A wrong key is refused with a message, and the form stays.
	p.do("open console", chromedp.Navigate(ts.URL+"/console/"), chromedp.WaitVisible(chromedp.CSS("#signin-form")))
	p.fill("#account", account)
	p.fill("#key", id+":wrong-secret")
	p.do("sign in with a wrong key", chromedp.Click(chromedp.CSS("#signin")), chromedp.WaitVisible(chromedp.CSS("#signin-form .error-box")))
	if got := p.text("#signin-form .error-box"); !strings.Contains(got, "not valid") {
		t.Errorf("wrong key: error %q, want it to say the key is not valid", got)
	}
	p.shot("signin-refused")

	p.fill("#key", token)
	p.do("sign in", chromedp.Click(chromedp.CSS("#signin")), chromedp.WaitVisible(chromedp.CSS("table#queues")))
	p.wait("empty list", `document.querySelector("#queues tbody").textContent.includes("No queues yet")`)
	if got := p.eval(`sessionStorage.getItem("sluice.console.session") || ""`); !strings.Contains(got, secret) {
		t.Errorf("the key is not in sessionStorage: %q", got)
	}
	if got := p.eval(`location.href`); strings.Contains(got, secret) || strings.Contains(got, id) {
		t.Errorf("the key shows in the URL %s", got)
	}
	p.shot("queues-empty")

	// Create a queue; the name is checked as it is typed.
	p.do("open the create form", chromedp.Click(chromedp.CSS("#create-queue-form summary")), chromedp.WaitVisible(chromedp.CSS("#new-queue-name")))
	if got := p.eval(`document.getElementById("new-queue-max_receive_count").value`); got != "5" {
		t.Errorf("max_receive_count default shown %q, want 5", got)
	}
	p.do("type a bad name", chromedp.SendKeys(chromedp.CSS("#new-queue-name"), "bad name"))
	if got := p.text("#new-queue-hint"); !strings.Contains(got, `" " is not allowed`) {
		t.Errorf("hint for a bad name: %q", got)
	}
	if got := p.eval(`String(document.getElementById("create-queue").disabled)`); got != "true" {
		t.Errorf("create button enabled for a bad name")
	}
	p.shot("create-invalid-name")
	p.fill("#new-queue-name", "")
	p.do("type a good name", chromedp.SendKeys(chromedp.CSS("#new-queue-name"), "orders"))
	p.wait("create enabled", `!document.getElementById("create-queue").disabled`)
	p.do("create", chromedp.Click(chromedp.CSS("#create-queue")))
	p.wait("queue listed with counts", `(document.querySelector('tr[data-queue="orders"] td[data-stat="ready"]') || {}).textContent === "0"`)
	p.shot("queues-created")

	// Send a message from the queue page; the ready count changes.
	p.openQueue("open the queue", "orders", "#overview-charts")
	p.do("messages tab", chromedp.Click(chromedp.CSS("#tab-messages")), chromedp.WaitVisible(chromedp.CSS("#message-body")))
	p.fill("#message-body", `{"order": `)
	if got := p.eval(`String(document.getElementById("send-message").disabled)`); got != "true" {
		t.Errorf("send enabled for invalid JSON")
	}
	if got := p.text("#message-hint"); !strings.Contains(got, "not valid JSON") {
		t.Errorf("hint for invalid JSON: %q", got)
	}
	p.fill("#message-body", `"just a string"`)
	if got := p.text("#message-hint"); !strings.Contains(got, "must be a JSON object") {
		t.Errorf("hint for a string body: %q", got)
	}
	p.fill("#message-body", `{"order": 42}`)
	p.do("send", chromedp.Click(chromedp.CSS("#send-message")))
	p.wait("sent", `document.getElementById("send-result").textContent.includes("sequence")`)
	p.wait("ready count 1", `(document.querySelector('#queue-counts [data-stat="ready"] b') || {}).textContent === "1"`)
	if got := p.text(`#queue-counts [data-stat="bytes"] b`); !regexp.MustCompile(`^[1-9][0-9,]* \(DLQ 0\)$`).MatchString(got) {
		t.Errorf("stored bytes of a queue holding one message: %q", got)
	}
	p.wait("peeked", `(document.querySelector("#messages tr[data-sequence]") || {textContent: ""}).textContent.includes('"order": 42')`)
	p.shot("queue-messages")

	// Back on the list, the count shows; a send by another client shows
	// after Refresh, and the old numbers stay while it refreshes.
	p.do("back to queues", chromedp.Click(chromedp.CSS(`a[href="#/queues"]`)), chromedp.WaitVisible(chromedp.CSS("table#queues")))
	p.wait("list ready count 1", `(document.querySelector('tr[data-queue="orders"] td[data-stat="ready"]') || {}).textContent === "1"`)
	if _, err := c.MQ.SendBatch(ctx, "orders", []any{map[string]int{"a": 1}, map[string]int{"a": 2}}); err != nil {
		t.Fatalf("send a batch through the API: %v", err)
	}
	p.do("refresh", chromedp.Click(chromedp.CSS("#refresh")))
	if got := p.text(`tr[data-queue="orders"] td[data-stat="ready"]`); got != "1" && got != "3" {
		t.Errorf("ready count during refresh %q: the previous number should stay", got)
	}
	p.wait("list ready count 3", `(document.querySelector('tr[data-queue="orders"] td[data-stat="ready"]') || {}).textContent === "3"`)
	p.shot("queues-refreshed")

	// Receive through the API: the message goes inflight.
	if ms, err := c.MQ.Receive(ctx, "orders", client.ReceiveOptions{MaxMessages: 1, VisibilityTimeoutSeconds: 600}); err != nil || len(ms) != 1 {
		t.Fatalf("receive through the API: %d messages, %v", len(ms), err)
	}
	p.do("refresh", chromedp.Click(chromedp.CSS("#refresh")))
	p.wait("inflight 1", `(document.querySelector('tr[data-queue="orders"] td[data-stat="inflight"]') || {}).textContent === "1"`)

	// Purge asks first: cancel keeps the messages, confirm purges.
	p.openQueue("open the queue again", "orders", "#tab-messages")
	p.do("messages tab again", chromedp.Click(chromedp.CSS("#tab-messages")), chromedp.WaitVisible(chromedp.CSS("#message-body")))
	p.wait("ready 2", `(document.querySelector('#queue-counts [data-stat="ready"] b') || {}).textContent === "2"`)
	p.wait("two peeked", `document.querySelectorAll("#messages tr[data-sequence]").length === 2`)
	p.do("delete one", chromedp.Click(chromedp.CSS(`#messages tr[data-sequence="2"] button`)))
	p.wait("one peeked", `document.querySelectorAll("#messages tr[data-sequence]").length === 1`)
	p.wait("ready 1 after delete", `(document.querySelector('#queue-counts [data-stat="ready"] b') || {}).textContent === "1"`)
	p.do("purge, then cancel", chromedp.Click(chromedp.CSS("#purge")), chromedp.WaitVisible(chromedp.CSS("#confirm-cancel")))
	p.shot("purge-confirm")
	p.do("cancel", chromedp.Click(chromedp.CSS("#confirm-cancel")), chromedp.WaitNotVisible(chromedp.CSS("#confirm")))
	p.confirm("purge, then confirm", "#purge")
	p.wait("ready 0 after purge", `(document.querySelector('#queue-counts [data-stat="ready"] b') || {}).textContent === "0"`)
	p.wait("nothing to peek", `document.getElementById("messages").textContent.includes("No messages")`)

	// A revoked key signs the console out at its next call.
	if err := c.Keys.Revoke(ctx, id); err != nil {
		t.Fatalf("revoke the key: %v", err)
	}
	p.do("peek with a revoked key", chromedp.Click(chromedp.CSS("#peek")), chromedp.WaitVisible(chromedp.CSS("#signin-form .error-box")))
	if got := p.eval(`sessionStorage.getItem("sluice.console.session") || ""`); got != "" {
		t.Errorf("the session is still stored after a 401: %q", got)
	}
	p.shot("signed-out-revoked")
}

func TestBrowserManyQueues(t *testing.T) {
	t.Parallel()
	ts, account, token, c := setup(t)
	ctx := context.Background()
	const n = 1000
	errs := make(chan error, n)
	names := make(chan string, n)
	for i := range n {
		names <- fmt.Sprintf("q-%04d", i)
	}
	close(names)
	for range 8 {
		go func() {
			for name := range names {
				_, err := c.Queues.Create(ctx, name, client.QueueSettings{})
				errs <- err
			}
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("create queues: %v", err)
		}
	}
	// One more than a page of the API holds (and than the account's limit
	// lets the API create: the operator's path is not limited), with a
	// message: the console reads both lists, names and live counts, whole.
	if _, err := ts.Queue().CreateQueue(ctx, account, "q-1000", pgqueue.Settings{}); err != nil {
		t.Fatalf("create queue q-1000: %v", err)
	}
	if _, err := c.MQ.Send(ctx, "q-1000", map[string]int{"last": 1}); err != nil {
		t.Fatalf("send: %v", err)
	}

	p := newPage(t)
	start := time.Now()
	p.signIn(ts.URL, account, token)
	p.wait("first page", `document.getElementById("queues-info").textContent === "1–50 of 1001"`)
	namesShown := time.Since(start)
	if got := p.eval(`String(document.querySelectorAll("#queues tbody tr").length)`); got != "50" {
		t.Errorf("rows on a page: %s, want 50", got)
	}
	p.wait("counts", `(document.querySelector('tr[data-queue="q-0000"] td[data-stat="ready"]') || {}).textContent === "0"`)
	counts := time.Since(start)
	p.shot("queues-1000")
	start = time.Now()
	p.do("next page", chromedp.Click(chromedp.CSS("#next-page")))
	p.wait("second page", `document.getElementById("queues-info").textContent === "51–100 of 1001" && document.getElementById("page-info").textContent === "Page 2 of 21"`)
	next := time.Since(start)
	if got := p.text("#queues tbody tr:first-child a"); got != "q-0050" {
		t.Errorf("first queue of page 2: %q, want q-0050", got)
	}
	start = time.Now()
	p.do("filter", chromedp.SendKeys(chromedp.CSS("#queue-filter"), "q-1000"))
	p.wait("filtered", `document.getElementById("queues-info").textContent === "1–1 of 1 (1001 in all)"`)
	filter := time.Since(start)
	p.wait("filtered count", `(document.querySelector('tr[data-queue="q-1000"] td[data-stat="ready"]') || {}).textContent === "1"`)
	p.shot("queues-filtered")
	// Measured, not asserted (the machine running the tests is shared).
	t.Logf("1,001 queues: names of the first page %s after signing in, their live counts %s; next page %s; filter %s",
		namesShown.Round(time.Millisecond), counts.Round(time.Millisecond), next.Round(time.Millisecond), filter.Round(time.Millisecond))
}

func TestBrowserDeadLetters(t *testing.T) {
	t.Parallel()
	ts, account, token, c := setup(t)
	ctx := context.Background()
	createQueue(t, c, "poison", 1)
	// Two poison messages: each leased once for a second, then
	// moved to the DLQ by the sweeper when the lease expires.
	if _, err := c.MQ.SendBatch(ctx, "poison", []any{map[string]int{"n": 1}, map[string]int{"n": 2}}); err != nil {
		t.Fatalf("send: %v", err)
	}
	if ms, err := c.MQ.Receive(ctx, "poison", client.ReceiveOptions{MaxMessages: 2, VisibilityTimeoutSeconds: 1}); err != nil || len(ms) != 2 {
		t.Fatalf("receive: %d messages, %v", len(ms), err)
	}

	p := newPage(t)
	p.signIn(ts.URL, account, token)
	p.do("open the DLQ tab", chromedp.Navigate(ts.URL+"/console/#/queues/poison/dlq"), chromedp.WaitVisible(chromedp.CSS("#dead-letters")))
	p.wait("two dead letters", `document.querySelectorAll("#dead-letters tr[data-sequence]").length === 2 || (document.getElementById("dlq-refresh").click(), false)`)
	if got := p.text("#dead-letters tbody"); !strings.Contains(got, "max_receive_count") {
		t.Errorf("dead letters do not show the reason: %q", got)
	}
	p.wait("DLQ count 2", `(document.querySelector('#queue-counts [data-stat="dlq"] b') || {}).textContent === "2"`)
	p.shot("dlq")

	p.do("delete one", chromedp.Click(chromedp.CSS("#dead-letters tr[data-sequence] button")))
	p.wait("one dead letter", `document.querySelectorAll("#dead-letters tr[data-sequence]").length === 1`)
	p.confirm("redrive", "#redrive")
	p.wait("DLQ empty", `document.getElementById("dead-letters").textContent.includes("empty")`)
	p.wait("ready 1 after redrive", `(document.querySelector('#queue-counts [data-stat="ready"] b') || {}).textContent === "1"`)
	p.shot("dlq-redriven")
	if ms, err := c.MQ.Peek(ctx, "poison", 10); err != nil || len(ms) != 1 {
		t.Fatalf("peek after redrive: %d messages, %v", len(ms), err)
	}

	// Settings: a save sends the changed fields only.
	p.do("settings tab", chromedp.Click(chromedp.CSS("#tab-settings")), chromedp.WaitVisible(chromedp.CSS("#settings-form")))
	if got := p.eval(`document.getElementById("setting-max_receive_count").value`); got != "1" {
		t.Errorf("max_receive_count shown %q, want 1", got)
	}
	p.fill("#setting-max_receive_count", "0")
	if got := p.eval(`String(document.getElementById("save-settings").disabled)`); got != "true" {
		t.Errorf("save enabled for max_receive_count 0")
	}
	p.fill("#setting-max_receive_count", "3")
	p.do("save", chromedp.Click(chromedp.CSS("#save-settings")))
	p.wait("saved", `document.getElementById("settings-result").textContent === "Saved: max_receive_count"`)
	if q, err := c.Queues.Get(ctx, "poison"); err != nil || q.MaxReceiveCount != 3 || q.VisibilityTimeoutSeconds != 30 {
		t.Errorf("after save: max_receive_count %d, visibility timeout %d (%v); want 3 and 30", q.MaxReceiveCount, q.VisibilityTimeoutSeconds, err)
	}
	p.shot("settings")

	// API snippets name this server and queue, never the secret.
	p.do("API tab", chromedp.Click(chromedp.CSS("#tab-api")), chromedp.WaitVisible(chromedp.CSS(`pre[data-snippet="curl"]`)))
	curl := p.text(`pre[data-snippet="curl"]`)
	if want := ts.URL + "/" + account + "/poison/messages"; !strings.Contains(curl, want) {
		t.Errorf("curl snippet does not contain %s:\n%s", want, curl)
	}
	_, secret, _ := strings.Cut(token, ":")
	if all := p.text("main"); strings.Contains(all, secret) {
		t.Errorf("the API tab shows the secret")
	}
	p.shot("api")
}

func TestBrowserManyDeadLetters(t *testing.T) {
	t.Parallel()
	srv, account, token, c := setup(t)
	ctx := context.Background()
	createQueue(t, c, "dead", 1)
	// 10,000 messages, each leased once for a second through the SQL API:
	// the sweeper moves them all to the DLQ when the leases expire.
	const n = 10000
	schema := pgx.Identifier{srv.Schema}.Sanitize()
	for i := range n / 1000 {
		if _, err := srv.Queue().Pool().Exec(ctx, `SELECT count(*) FROM `+schema+`.account_send_batch($1, 'dead',
			ARRAY(SELECT jsonb_build_object('n', g) FROM generate_series($2::int, $2::int + 999) g))`, account, i*1000); err != nil {
			t.Fatalf("send: %v", err)
		}
		if _, err := srv.Queue().Pool().Exec(ctx, `SELECT count(*) FROM `+schema+`.account_receive($1, 'dead', 1000, 1)`, account); err != nil {
			t.Fatalf("receive: %v", err)
		}
	}

	p := newPage(t)
	p.signIn(srv.URL, account, token)
	p.do("open the DLQ tab", chromedp.Navigate(srv.URL+"/console/#/queues/dead/dlq"), chromedp.WaitVisible(chromedp.CSS("#dead-letters")))
	p.wait("DLQ count 10,000", `(document.querySelector('#queue-counts [data-stat="dlq"] b') || {}).textContent === "10,000" || (document.getElementById("dlq-refresh").click(), false)`)
	// The count and the list come from separate requests: a list read while
	// the sweeper was still moving letters is refreshed until it is full.
	p.wait("100 dead letters shown", `(document.querySelectorAll("#dead-letters tr[data-sequence]").length === 100 && !document.getElementById("dlq-next").disabled) || (document.getElementById("dlq-refresh").click(), false)`)
	p.shot("dlq-10000")
	seqs := func() string {
		return p.eval(`[...document.querySelectorAll("#dead-letters tr[data-sequence]")].map((r) => r.dataset.sequence).join(",")`)
	}
	first := strings.Split(seqs(), ",")

	// Next shows the 100 after the last one shown; back to start the first.
	start := time.Now()
	p.do("next page", chromedp.Click(chromedp.CSS("#dlq-next")))
	p.wait("page 2", `document.getElementById("dlq-page").textContent.startsWith("Page 2")`)
	// Measured, not asserted (the machine running the tests is shared).
	t.Logf("10,000 dead letters: next page of 100 shown %s after the click", time.Since(start).Round(time.Millisecond))
	second := strings.Split(seqs(), ",")
	if len(second) != 100 || atoi(t, second[0]) <= atoi(t, first[99]) {
		t.Fatalf("page 2 has %d letters starting at %s; want 100 after %s", len(second), second[0], first[99])
	}
	var all []int64
	if err := srv.Queue().Pool().QueryRow(ctx, `SELECT array_agg(sequence ORDER BY sequence) FROM (SELECT sequence FROM `+schema+`.dead_letters ORDER BY sequence LIMIT 200) d`).Scan(&all); err != nil {
		t.Fatal(err)
	}
	if got, want := second[0]+".."+second[99], fmt.Sprintf("%d..%d", all[100], all[199]); got != want {
		t.Errorf("page 2 shows sequences %s, want letters 101-200 (%s)", got, want)
	}
	p.shot("dlq-10000-page-2")

	// Select two letters on page 2 and redrive just those.
	p.do("select two", chromedp.Click(chromedp.CSS(`#dead-letters tr[data-sequence="`+second[0]+`"] input`)),
		chromedp.Click(chromedp.CSS(`#dead-letters tr[data-sequence="`+second[5]+`"] input`)))
	p.wait("selection counted", `document.getElementById("redrive-selected").textContent === "Redrive 2 selected…"`)
	p.confirm("redrive selected", "#redrive-selected")
	p.wait("redriven two", `document.getElementById("toast").textContent === "Redrove 2 messages"`)
	p.wait("back to start", `document.getElementById("dlq-page").textContent.startsWith("Page 1")`)
	p.wait("ready 2", `(document.querySelector('#queue-counts [data-stat="ready"] b') || {}).textContent === "2"`)
	if ms, err := c.MQ.Peek(ctx, "dead", 10); err != nil || len(ms) != 2 || fmt.Sprint(ms[0].Sequence) != second[0] || fmt.Sprint(ms[1].Sequence) != second[5] {
		t.Errorf("after redriving %s and %s the queue holds %v (%v)", second[0], second[5], ms, err)
	}

	p.confirm("redrive all", "#redrive")
	p.wait("redriven", `document.getElementById("toast").textContent === "Redrove 9,998 messages"`)
	p.wait("ready 10,000", `(document.querySelector('#queue-counts [data-stat="ready"] b') || {}).textContent === "10,000"`)
	p.shot("dlq-10000-redriven")
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}

// buildExample builds examples/<example> as a reactor module.
func buildExample(t *testing.T, example string) []byte {
	t.Helper()
	path, err := wasmbuild.Build(context.Background(), example, wasmbuild.Reactor)
	if err != nil {
		t.Fatalf("build %s: %v", example, err)
	}
	module, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return module
}

// deploy deploys module as function name with env ("K=V"), moving alias
// to it, and returns the version.
func deploy(t *testing.T, c *client.Client, name string, module []byte, alias string, env ...string) int {
	t.Helper()
	o := client.DeployOptions{Alias: alias, MemoryMB: 32, Env: map[string]string{}}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		o.Env[k] = v
	}
	d, err := c.Functions.Deploy(context.Background(), name, module, o)
	if err != nil {
		t.Fatalf("deploy %s: %v", name, err)
	}
	return d.Version
}

// liveVersion is the version alias live of function name points at.
func liveVersion(t *testing.T, c *client.Client, name string) int {
	t.Helper()
	f, err := c.Functions.Get(context.Background(), name)
	if err != nil {
		t.Fatalf("get function %s: %v", name, err)
	}
	return f.Aliases["live"]
}

// Each question of the confirm dialog gets its own answer, also when the
// next one opens before the previous one's close event arrived (a close
// event is a later task). Answering both from the second's event once
// made a cancelled rollback run beside the confirmed one: live went
// v2 → v1 → v2 and TestBrowserFunctionRollback failed now and then.
func TestBrowserConfirmAnswersEachQuestion(t *testing.T) {
	t.Parallel()
	ts, _, _, _ := setup(t)
	p := newPage(t)
	p.do("open console", chromedp.Navigate(ts.URL+"/console/"), chromedp.WaitVisible(chromedp.CSS("#signin-form")))
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	answers, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => {
  const dom = await import("/console/assets/js/dom.js");
  const dlg = document.getElementById("confirm");
  const first = dom.confirmAction("first?");
  dlg.close("cancel");
  const second = dom.confirmAction("second?");
  dlg.close("ok");
  const third = dom.confirmAction("third?");
  dlg.close("cancel");
  return (await Promise.all([first, second, third])).join(",");
})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if answers != "false,true,false" {
		t.Errorf("answers to cancel, confirm, cancel asked back to back: %s, want false,true,false", answers)
	}
}

func TestBrowserFunctionRollback(t *testing.T) {
	t.Parallel()
	ts, account, token, c := setup(t)
	// A tiny handwritten module (compiling a Go one under -race takes
	// long): two versions differing in env.
	module := wasmbuild.Handwritten("trap")
	if v := deploy(t, c, "checkout", module, "live", "RELEASE=one"); v != 1 {
		t.Fatalf("first deploy is version %d, want 1", v)
	}
	if v := deploy(t, c, "checkout", module, "live", "RELEASE=two", "TOKEN=hunter2"); v != 2 {
		t.Fatalf("second deploy is version %d, want 2", v)
	}
	// canary has never moved: nothing to roll it back to.
	if err := c.Functions.SetAlias(context.Background(), "checkout", "canary", 1); err != nil {
		t.Fatal(err)
	}

	p := newPage(t)
	p.signIn(ts.URL, account, token)
	p.do("functions page", chromedp.Click(chromedp.CSS(`#nav a[data-section="functions"]`)), chromedp.WaitVisible(chromedp.CSS(`tr[data-function="checkout"]`)))
	if got := p.text(`tr[data-function="checkout"]`); !strings.Contains(got, "v2") || !strings.Contains(got, "live → v2") {
		t.Errorf("functions list row: %q, want latest v2 and live → v2", got)
	}
	p.shot("functions")

	p.do("function page", chromedp.Click(chromedp.CSS(`tr[data-function="checkout"] a`)), chromedp.WaitVisible(chromedp.CSS(`#versions tr[data-version="1"]`)))
	p.wait("live on v2", `(document.querySelector('#aliases tr[data-alias="live"] td[data-version]') || {}).textContent === "v2"`)
	v2 := p.text(`#versions tr[data-version="2"]`)
	if !strings.Contains(v2, "TOKEN=****") || strings.Contains(v2, "hunter2") || !strings.Contains(v2, "32 MiB") {
		t.Errorf("version 2 row %q: want masked env TOKEN=**** and 32 MiB, never the value", v2)
	}
	p.shot("function")

	// Rollback names where it goes, asks first, then moves live back to v1.
	if got := p.text(`button[data-rollback="live"]`); got != "Rollback to v1…" {
		t.Errorf("live's rollback button reads %q, want \"Rollback to v1…\"", got)
	}
	if got := p.eval(`String(document.querySelector('button[data-rollback="canary"]').disabled)`); got != "true" {
		t.Errorf("canary's rollback button disabled = %s, want true (it never moved)", got)
	}
	p.do("rollback, then cancel", chromedp.Click(chromedp.CSS(`button[data-rollback="live"]`)), chromedp.WaitVisible(chromedp.CSS("#confirm-cancel")))
	if got := p.text("#confirm"); !strings.Contains(got, "back from v2 to v1") {
		t.Errorf("rollback confirmation %q, want it to name both versions (from v2 to v1)", got)
	}
	p.do("cancel", chromedp.Click(chromedp.CSS("#confirm-cancel")), chromedp.WaitNotVisible(chromedp.CSS("#confirm")))
	if v := liveVersion(t, c, "checkout"); v != 2 {
		t.Errorf("after a cancelled rollback live is v%d, want v2", v)
	}
	p.confirm("rollback", `button[data-rollback="live"]`)
	p.wait("live on v1", `(document.querySelector('#aliases tr[data-alias="live"] td[data-version]') || {}).textContent === "v1"`)
	if v := liveVersion(t, c, "checkout"); v != 1 {
		t.Errorf("after rollback live is v%d, want v1", v)
	}
	p.wait("rollback now to v2", `(document.querySelector('button[data-rollback="live"]') || {}).textContent === "Rollback to v2…"`)
	p.shot("function-rolled-back")

	// Point live at v2 again from its row.
	p.confirm("point live at v2", `#versions tr[data-version="2"] button[data-point="live"]`)
	p.wait("live on v2 again", `(document.querySelector('#aliases tr[data-alias="live"] td[data-version]') || {}).textContent === "v2"`)
	if v := liveVersion(t, c, "checkout"); v != 2 {
		t.Errorf("after pointing live at v2 it is v%d", v)
	}

	// API errors show in the error box.
	p.do("a missing function", chromedp.Navigate(ts.URL+"/console/#/functions/missing"), chromedp.WaitVisible(chromedp.CSS("#function-detail .error-box")))
	if got := p.text("#function-detail .error-box"); !strings.Contains(got, `function "missing" not found`) {
		t.Errorf("missing function: %q", got)
	}
	p.do("a missing invocation", chromedp.Navigate(ts.URL+"/console/#/invocations/999999"), chromedp.WaitVisible(chromedp.CSS("main .error-box")))
	if got := p.text("main .error-box"); !strings.Contains(got, "not_found") {
		t.Errorf("missing invocation: %q", got)
	}
}

// waitFor polls cond (every 100 ms, up to a minute) until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The path with a real function: a message sent in the console
// reaches the DLQ through the failures of the poison function; once the
// operator points live at a fixed version on the function page, Redrive
// selected sends it back and it is processed. The Triggers tab, the
// Invocations page and the function page show what ran.
func TestBrowserPoisonToDLQAndRedrive(t *testing.T) {
	t.Parallel()
	ts, account, token, c := setup(t)
	ctx := context.Background()
	createQueue(t, c, "orders", 2)
	deploy(t, c, "fulfil", buildExample(t, "poison"), "live") // v1, live
	deploy(t, c, "fulfil", buildExample(t, "noop"), "next")   // v2, the fix, not live yet
	if _, err := c.Triggers.Put(ctx, client.Trigger{Name: "orders-fulfil", Kind: "queue", Function: "fulfil", Queue: "orders",
		BatchSize: 1, BackoffInitialMS: 1, BackoffMaxMS: 5}); err != nil {
		t.Fatalf("put trigger: %v", err)
	}

	p := newPage(t)
	p.signIn(ts.URL, account, token)
	p.do("open the queue", chromedp.Navigate(ts.URL+"/console/#/queues/orders/messages"), chromedp.WaitVisible(chromedp.CSS("#message-body")))
	p.fill("#message-body", `{"order": 7, "poison": true}`)
	p.do("send", chromedp.Click(chromedp.CSS("#send-message")))
	p.wait("sent", `document.getElementById("send-result").textContent.includes("sequence")`)
	_, seq, _ := strings.Cut(p.text("#send-result"), "sequence ")

	// The function fails it twice (max_receive_count 2): it is dead.
	p.do("DLQ tab", chromedp.Click(chromedp.CSS("#tab-dlq")), chromedp.WaitVisible(chromedp.CSS("#dead-letters")))
	row := `#dead-letters tr[data-sequence="` + seq + `"]`
	p.wait("dead letter", `!!document.querySelector('`+row+`') || (document.getElementById("dlq-refresh").click(), false)`)
	if got := p.text(row); !strings.Contains(got, "poison: this function rejects every message") || !strings.Contains(got, "max_receive_count") {
		t.Errorf("dead letter row %q: want the function's error and reason max_receive_count", got)
	}
	p.shot("dlq")
	// poison fails every message of its one-message batches: failure
	// (kind item_failures).
	var failed []client.Invocation
	waitFor(t, "two failed invocations recorded", func() bool { // the engine records them asynchronously
		var err error
		failed, err = c.Invocations.List(ctx, client.InvocationsOptions{Function: "fulfil", Outcome: "failure"})
		return err == nil && len(failed) == 2
	})

	// Point live at the fix on the function page.
	p.do("function page", chromedp.Navigate(ts.URL+"/console/#/functions/fulfil"), chromedp.WaitVisible(chromedp.CSS(`#versions tr[data-version="2"] button[data-point="live"]`)))
	p.confirm("point live at v2", `#versions tr[data-version="2"] button[data-point="live"]`)
	p.wait("live on v2", `(document.querySelector('#aliases tr[data-alias="live"] td[data-version]') || {}).textContent === "v2"`)
	if v := liveVersion(t, c, "fulfil"); v != 2 {
		t.Fatalf("live is v%d after pointing it at v2", v)
	}
	time.Sleep(2 * time.Second) // the engine re-reads aliases every second (triggers.Config.ReloadInterval)

	// Redrive just that letter from the DLQ tab: v2 processes it.
	p.do("DLQ tab again", chromedp.Navigate(ts.URL+"/console/#/queues/orders/dlq"), chromedp.WaitVisible(chromedp.CSS(row+" input")))
	p.do("select it", chromedp.Click(chromedp.CSS(row+" input")))
	p.confirm("redrive selected", "#redrive-selected")
	p.wait("redriven", `document.getElementById("toast").textContent === "Redrove 1 message"`)
	p.wait("DLQ empty", `document.getElementById("dead-letters").textContent.includes("empty")`)
	waitFor(t, "the redriven message processed by version 2", func() bool {
		ok, err := c.Invocations.List(ctx, client.InvocationsOptions{Function: "fulfil", Outcome: "success"})
		return err == nil && len(ok) == 1 && ok[0].Version == 2 && fmt.Sprint(ok[0].MessageIDs) == "["+seq+"]"
	})
	p.do("DLQ refresh", chromedp.Click(chromedp.CSS("#dlq-refresh")))
	p.wait("queue empty", `['ready', 'inflight', 'dlq'].every((k) => (document.querySelector('#queue-counts [data-stat="' + k + '"] b') || {}).textContent === "0")`)

	// The Triggers tab: the trigger and its three invocations.
	p.do("Triggers tab", chromedp.Click(chromedp.CSS("#tab-triggers")), chromedp.WaitVisible(chromedp.CSS(`tr[data-trigger="orders-fulfil"]`)))
	p.wait("three invocations", `document.querySelectorAll("#trigger-invocations tr[data-invocation]").length === 3`)
	if got := p.text(`tr[data-trigger="orders-fulfil"]`); !strings.Contains(got, "fulfil") || !strings.Contains(got, "yes") {
		t.Errorf("trigger row %q: want function fulfil, enabled", got)
	}
	if got := p.eval(`[...document.querySelectorAll("#trigger-invocations tr[data-invocation]")].map((r) => r.dataset.outcome).join(",")`); got != "success,failure,failure" {
		t.Errorf("trigger invocations newest first: %s, want success,failure,failure", got)
	}
	p.shot("triggers")

	// Invocations filtered by outcome: the two poison runs only.
	p.do("Invocations page", chromedp.Click(chromedp.CSS(`#nav a[data-section="invocations"]`)), chromedp.WaitVisible(chromedp.CSS("#inv-filters")))
	p.wait("all three", `document.querySelectorAll("#invocations tr[data-invocation]").length === 3`)
	p.eval(`document.getElementById("inv-outcome").value = "failure"; ""`)
	p.do("filter failures", chromedp.Click(chromedp.CSS("#inv-apply")))
	p.wait("two failures", `location.hash.includes("outcome=failure") && document.querySelectorAll("#invocations tr[data-invocation]").length === 2`)
	if got := p.eval(`[...document.querySelectorAll("#invocations tr[data-invocation]")].map((r) => r.dataset.outcome + ":" + r.dataset.invocation).join(",")`); got != fmt.Sprintf("failure:%d,failure:%d", failed[0].ID, failed[1].ID) {
		t.Errorf("failure filter shows %s; want invocations %d and %d", got, failed[0].ID, failed[1].ID)
	}
	p.shot("invocations")
	// An until before them all leaves none.
	p.fill("#inv-until", "2001-01-01T00:00:00")
	p.do("filter until 2001", chromedp.Click(chromedp.CSS("#inv-apply")))
	p.wait("none until 2001", `location.hash.includes("until=2001-01-01T00%3A00%3A00.000Z") && !!document.getElementById("no-invocations")`)
	p.do("back to the failures", chromedp.NavigateBack())
	p.wait("two failures again", `document.querySelectorAll("#invocations tr[data-invocation]").length === 2`)

	// One invocation: trigger, version, the message, error and stderr.
	p.do("open one", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#invocations tr[data-invocation="%d"] a`, failed[0].ID))), chromedp.WaitVisible(chromedp.CSS("#invocation-fields")))
	fields := p.text("#invocation-fields")
	for _, want := range []string{"orders-fulfil", "v1", "failure"} {
		if !strings.Contains(fields, want) {
			t.Errorf("invocation fields %q lack %q", fields, want)
		}
	}
	if got := p.text("#invocation-messages"); got != seq {
		t.Errorf("invocation messages %q, want %s", got, seq)
	}
	if got := p.text("#invocation-error"); !strings.Contains(got, "poison: this function rejects every message") {
		t.Errorf("invocation error %q", got)
	}
	if got := p.text("#invocation-stderr"); !strings.Contains(got, "rejected batch") {
		t.Errorf("invocation stderr %q: want the function's log line", got)
	}
	p.shot("invocation")

	// The function page: the recent runs with their logs.
	p.do("function page again", chromedp.Click(chromedp.CSS(`#invocation-fields a[href="#/functions/fulfil"]`)), chromedp.WaitVisible(chromedp.CSS(`#versions tr[data-version="2"]`)))
	p.wait("runs", `document.querySelectorAll("#function-invocations tr[data-invocation]").length === 3`)
	if got := p.text("#function-invocations"); !strings.Contains(got, "rejected batch") {
		t.Errorf("function page invocations lack the stderr: %q", got)
	}
	p.shot("function")
}

// The Overview chart draws the API's minute data: sends, acks and DLQ
// moves per minute and depth, with axis labels and a legend.
func TestBrowserOverviewChart(t *testing.T) {
	t.Parallel()
	srv, account, token, c := setup(t)
	ctx := context.Background()
	createQueue(t, c, "charted", 1)
	if _, err := c.MQ.SendBatch(ctx, "charted", []any{1, 2, 3, 4, 5}); err != nil {
		t.Fatalf("send: %v", err)
	}
	if ms, err := c.MQ.Receive(ctx, "charted", client.ReceiveOptions{MaxMessages: 2, Delete: true}); err != nil || len(ms) != 2 {
		t.Fatalf("receive and ack two: %d, %v", len(ms), err)
	}
	// One leased for a second past max_receive_count: the sweeper moves it.
	if ms, err := c.MQ.Receive(ctx, "charted", client.ReceiveOptions{MaxMessages: 1, VisibilityTimeoutSeconds: 1}); err != nil || len(ms) != 1 {
		t.Fatalf("lease one: %d, %v", len(ms), err)
	}
	waitFor(t, "a dead letter", func() bool {
		d, err := c.MQ.ReceiveDLQ(ctx, "charted", 10)
		return err == nil && len(d) == 1
	})
	// Store the server's counts and a depth sample now, not at the next
	// minute.
	recordStats := func() {
		if err := pgqueue.NewSweeper(srv.Queue(), pgqueue.SweeperOptions{}).RecordStats(ctx); err != nil {
			t.Fatalf("record stats: %v", err)
		}
	}
	recordStats()

	p := newPage(t)
	p.signIn(srv.URL, account, token)
	p.openQueue("open the queue", "charted", "#chart-throughput")
	if got := p.eval(`document.querySelector("#tab-overview").getAttribute("aria-current") || ""`); got != "page" {
		t.Errorf("the default tab is not Overview")
	}
	// series sums the values one series drew, and counts them.
	series := func(chart, key string) string {
		return p.eval(fmt.Sprintf(`(() => {
			const g = document.querySelector('#%s g[data-series="%s"]');
			if (!g) return "missing";
			const vs = g.dataset.values.split(",");
			const got = vs.filter((v) => v !== "").map(Number);
			return vs.length + " minutes, sum " + got.reduce((a, b) => a + b, 0) + ", last " + got[got.length - 1] + ", " + g.querySelectorAll("polyline, circle").length + " marks";
		})()`, chart, key))
	}
	for _, tc := range []struct{ chart, key, want string }{
		{"chart-throughput", "sends", "60 minutes, sum 5, last "},
		{"chart-throughput", "acks", "60 minutes, sum 2, last "},
		{"chart-throughput", "dlq_moves", "60 minutes, sum 1, last "},
		{"chart-depth", "depth", ", last 2, "}, // 5 sent - 2 acked - 1 dead, ready + inflight
	} {
		if got := series(tc.chart, tc.key); !strings.Contains(got, tc.want) || strings.HasSuffix(got, " 0 marks") {
			t.Errorf("%s series %s: %s; want %q and a line", tc.chart, tc.key, got, tc.want)
		}
	}
	if got := p.eval(`[...document.querySelectorAll("#chart-throughput [data-legend]")].map((g) => g.textContent).join("|")`); got != "sends|acks|DLQ moves" {
		t.Errorf("throughput legend %q", got)
	}
	if got := p.eval(`[...document.querySelectorAll("#chart-depth .axis-label")].map((e) => e.textContent).join("|")`); got != "messages|minute (UTC)" {
		t.Errorf("depth axis labels %q", got)
	}
	if got := p.text("#overview-totals"); got != "In the last hour: 5 sent · 2 acked · 1 moved to the DLQ" {
		t.Errorf("totals %q", got)
	}
	if got := p.text(`#overview-settings [data-setting="max_receive_count"]`); got != "1" {
		t.Errorf("max_receive_count shown %q, want 1", got)
	}
	p.shot("queue-overview")

	// A refresh draws new data.
	if _, err := c.MQ.Send(ctx, "charted", map[string]int{"n": 6}); err != nil {
		t.Fatalf("send: %v", err)
	}
	recordStats()
	p.do("refresh", chromedp.Click(chromedp.CSS("#overview-refresh")))
	p.wait("six sends", `document.getElementById("overview-totals").textContent.includes("6 sent")`)
	if got := series("chart-depth", "depth"); !strings.Contains(got, ", last 3, ") {
		t.Errorf("depth after one more send: %s, want last 3", got)
	}
}

// The Invocations page pages newest first with before_id.
func TestBrowserInvocationPaging(t *testing.T) {
	t.Parallel()
	srv, account, token, _ := setup(t)
	ctx := context.Background()
	// 120 recorded runs of "batchy", one a second, ids in time order.
	if _, err := srv.Queue().Pool().Exec(ctx, `INSERT INTO `+pgx.Identifier{srv.Schema}.Sanitize()+`.invocations
		(account, function, version, trigger_type, source, batch_size, started_at, duration_ms, outcome, message_ids)
		SELECT $1, 'batchy', 1, 'queue', 'jobs', 1, now() - (120 - g) * interval '1 second', 1.5, 'success', ARRAY[g::bigint]
		  FROM generate_series(1, 120) g ORDER BY g`, account); err != nil {
		t.Fatalf("record invocations: %v", err)
	}
	p := newPage(t)
	p.signIn(srv.URL, account, token)
	p.do("invocations of batchy", chromedp.Navigate(srv.URL+"/console/#/invocations?function=batchy"), chromedp.WaitVisible(chromedp.CSS("#inv-older")))
	ids := func() []string {
		return strings.Split(p.eval(`[...document.querySelectorAll("#invocations tr[data-invocation]")].map((r) => r.dataset.invocation).join(",")`), ",")
	}
	p.wait("first page", `document.querySelectorAll("#invocations tr[data-invocation]").length === 50`)
	first := ids()
	if got := p.eval(`document.getElementById("inv-function").value`); got != "batchy" {
		t.Errorf("function filter shows %q", got)
	}
	p.shot("invocations-page-1")
	p.do("older", chromedp.Click(chromedp.CSS("#inv-older")))
	p.wait("page 2", `document.getElementById("inv-page").textContent.startsWith("Page 2")`)
	second := ids()
	if len(second) != 50 || atoi(t, second[0]) != atoi(t, first[49])-1 {
		t.Errorf("page 2 starts at %s after page 1 ended at %s; want the next older id", second[0], first[49])
	}
	p.do("older again", chromedp.Click(chromedp.CSS("#inv-older")))
	p.wait("last page", `document.getElementById("inv-page").textContent.startsWith("Page 3") && document.getElementById("inv-older").disabled`)
	if got := ids(); len(got) != 20 || atoi(t, got[0]) != atoi(t, second[49])-1 {
		t.Errorf("page 3 has %d runs from %s; want 20 from %d", len(got), got[0], atoi(t, second[49])-1)
	}
	p.do("newest", chromedp.Click(chromedp.CSS("#inv-newest")))
	p.wait("page 1 again", `document.getElementById("inv-page").textContent.startsWith("Page 1")`)
	if got := ids(); got[0] != first[0] {
		t.Errorf("newest page starts at %s, want %s", got[0], first[0])
	}
}

// The send form's options: a bad TTL or header line disables Send with a
// hint naming the allowed form; a message sent with a header, a TTL and
// a dedup key shows its header when peeked.
func TestBrowserSendWithOptions(t *testing.T) {
	t.Parallel()
	ts, account, token, c := setup(t)
	ctx := context.Background()
	createQueue(t, c, "orders", 5)
	p := newPage(t)
	p.signIn(ts.URL, account, token)
	p.do("open the queue", chromedp.Navigate(ts.URL+"/console/#/queues/orders/messages"), chromedp.WaitVisible(chromedp.CSS("#message-headers")))
	p.fill("#message-body", `{"order": 9}`)
	p.fill("#message-ttl", "0")
	if got := p.text("#message-hint"); !strings.Contains(got, "TTL: a whole number of seconds, 1–1209600") {
		t.Errorf("hint for TTL 0: %q", got)
	}
	p.fill("#message-ttl", "300")
	p.fill("#message-headers", "no-equals-sign")
	if got := p.text("#message-hint"); !strings.Contains(got, "headers line 1: use key=value") {
		t.Errorf("hint for a bad header line: %q", got)
	}
	if got := p.eval(`String(document.getElementById("send-message").disabled)`); got != "true" {
		t.Errorf("send enabled for a bad header line")
	}
	p.fill("#message-headers", "trace=abc-123\nsource = console")
	p.fill("#message-dedup", "order-9")
	p.wait("send enabled", `!document.getElementById("send-message").disabled`)
	p.do("send", chromedp.Click(chromedp.CSS("#send-message")))
	p.wait("sent", `document.getElementById("send-result").textContent.includes("sequence")`)
	p.wait("peeked with its header", `(document.querySelector("#messages tr[data-sequence]") || {textContent: ""}).textContent.includes('"trace": "abc-123"')`)
	p.shot("send-with-headers")

	ms, err := c.MQ.Peek(ctx, "orders", 10)
	if err != nil || len(ms) != 1 || string(ms[0].Headers) != `{"trace":"abc-123","source":"console"}` && string(ms[0].Headers) != `{"source":"console","trace":"abc-123"}` {
		t.Fatalf("peek through the API: %+v, %v", ms, err)
	}
	// The dedup key went with it: a second send answers the same sequence.
	seq, err := c.MQ.Send(ctx, "orders", map[string]int{"order": 9}, client.SendOptions{DedupKey: "order-9"})
	if err != nil || seq != ms[0].Sequence {
		t.Fatalf("send with the same dedup key: %d, %v; want %d", seq, err, ms[0].Sequence)
	}
}

func TestBrowserTopics(t *testing.T) {
	t.Parallel()
	ts, account, token, c := setup(t)
	ctx := context.Background()
	createQueue(t, c, "billing", 5)
	createQueue(t, c, "shipping", 5)
	if _, err := c.Topics.Create(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Topics.Subscribe(ctx, "orders", "billing", client.SubscribeOptions{Filter: map[string]string{"type": "order"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Topics.Subscribe(ctx, "orders", "shipping"); err != nil {
		t.Fatal(err)
	}

	p := newPage(t)
	p.signIn(ts.URL, account, token)
	p.do("open topics", chromedp.Click(chromedp.CSS(`#nav a[data-section="topics"]`)), chromedp.WaitVisible(chromedp.CSS("#topics table")))
	if got := p.text(`#topics tr[data-queue="billing"]`); !strings.Contains(got, "type = order") || !strings.Contains(got, "orders") {
		t.Errorf("billing row: %q", got)
	}
	if got := p.text(`#topics tr[data-queue="shipping"]`); !strings.Contains(got, "every message") {
		t.Errorf("shipping row: %q", got)
	}
	p.shot("topics")

	// A message without headers goes to shipping only; with the header to both.
	p.fill("#publish-body", `{"n": 12345678901234567890}`)
	p.do("publish", chromedp.Click(chromedp.CSS("#publish")))
	p.wait("published once", `document.getElementById("publish-result").textContent === "Published to orders: 1 copy"`)
	p.fill("#publish-headers", `{"type": "order"}`)
	p.do("publish with headers", chromedp.Click(chromedp.CSS("#publish")))
	p.wait("published twice", `document.getElementById("publish-result").textContent === "Published to orders: 2 copies"`)
	p.fill("#publish-headers", `[1]`)
	p.do("publish bad headers", chromedp.Click(chromedp.CSS("#publish")))
	p.wait("bad headers refused", `document.getElementById("publish-result").textContent === "headers must be a JSON object"`)
	p.shot("published")
	if ms, err := c.MQ.Peek(ctx, "shipping", 10); err != nil || len(ms) != 2 || !strings.Contains(string(ms[0].Body), "12345678901234567890") {
		t.Errorf("shipping holds %+v, %v", ms, err)
	}
	if ms, err := c.MQ.Peek(ctx, "billing", 10); err != nil || len(ms) != 1 {
		t.Errorf("billing holds %d messages, %v", len(ms), err)
	}
}

// A queue's Overview says where its dead letters go.
func TestBrowserDeadLetterQueueSetting(t *testing.T) {
	t.Parallel()
	ts, account, token, c := setup(t)
	ctx := context.Background()
	createQueue(t, c, "dead", 5)
	if _, err := c.Queues.Create(ctx, "work", client.QueueSettings{DeadLetterQueue: client.String("dead")}); err != nil {
		t.Fatal(err)
	}
	p := newPage(t)
	p.signIn(ts.URL, account, token)
	p.do("open work", chromedp.Navigate(ts.URL+"/console/#/queues/work"), chromedp.WaitVisible(chromedp.CSS(`#overview-settings dd[data-setting="dead_letter_queue"]`)))
	if got := p.text(`#overview-settings dd[data-setting="dead_letter_queue"]`); got != "queue dead" {
		t.Errorf("work's dead letters go to %q", got)
	}
	p.do("open dead", chromedp.Navigate(ts.URL+"/console/#/queues/dead"))
	p.wait("dead's setting", `(document.querySelector('#overview-settings dd[data-setting="dead_letter_queue"]') || {}).textContent === "the DLQ tab"`)
	p.shot("dead-letter-queue")
}

// The topics page creates a topic, subscribes queues (one with a filter),
// refuses a bad filter and an unknown queue with the API's error,
// unsubscribes and deletes the topic.
func TestBrowserTopicsManage(t *testing.T) {
	t.Parallel()
	ts, account, token, c := setup(t)
	ctx := context.Background()
	createQueue(t, c, "billing", 5)
	createQueue(t, c, "shipping", 5)
	p := newPage(t)
	p.signIn(ts.URL, account, token)
	p.do("open topics", chromedp.Click(chromedp.CSS(`#nav a[data-section="topics"]`)), chromedp.WaitVisible(chromedp.CSS("#create-topic")))
	p.fill("#new-topic", "orders")
	p.do("create", chromedp.Click(chromedp.CSS("#create-topic")))
	p.wait("created", `document.getElementById("manage-result").textContent === "Created topic orders"`)
	p.wait("listed", `!!document.querySelector('#topics tr[data-topic="orders"]') && document.getElementById("subscribe-topic").value === "orders"`)

	p.fill("#subscribe-queue", "billing")
	p.fill("#subscribe-filter", `{"type": "order"}`)
	p.do("subscribe billing", chromedp.Click(chromedp.CSS("#subscribe")))
	p.wait("billing subscribed", `!!document.querySelector('#topics tr[data-queue="billing"]')`)
	p.fill("#subscribe-queue", "shipping")
	p.fill("#subscribe-filter", `{"type": `)
	p.do("bad filter", chromedp.Click(chromedp.CSS("#subscribe")))
	p.wait("bad filter refused", `document.getElementById("manage-result").textContent.startsWith("filter: not valid JSON")`)
	p.fill("#subscribe-filter", "")
	p.fill("#subscribe-queue", "nowhere")
	p.do("unknown queue", chromedp.Click(chromedp.CSS("#subscribe")))
	p.wait("unknown queue refused", `document.getElementById("manage-result").textContent.includes("nowhere")`)
	p.fill("#subscribe-queue", "shipping")
	p.do("subscribe shipping", chromedp.Click(chromedp.CSS("#subscribe")))
	p.wait("shipping subscribed", `!!document.querySelector('#topics tr[data-queue="shipping"]')`)
	p.shot("topics-manage")
	tp, err := c.Topics.Get(ctx, "orders")
	if err != nil || len(tp.Subscriptions) != 2 {
		t.Fatalf("orders after subscribing: %+v, %v", tp, err)
	}
	for _, s := range tp.Subscriptions {
		if s.Queue == "billing" && s.Filter["type"] != "order" {
			t.Errorf("billing's filter = %v, want type=order", s.Filter)
		}
	}

	p.do("unsubscribe billing", chromedp.Click(chromedp.CSS(`#topics tr[data-queue="billing"] button.unsubscribe`)))
	p.wait("billing gone", `!document.querySelector('#topics tr[data-queue="billing"]')`)
	p.confirm("delete the topic", `#topics tr[data-queue="shipping"] button.delete-topic`)
	p.wait("topic gone", `document.getElementById("manage-result").textContent === "Deleted topic orders"`)
	if _, err := c.Topics.Get(ctx, "orders"); err == nil {
		t.Errorf("topic orders still exists after the console deleted it")
	}
}

// The invocation page lists the messages the invocation emitted, in
// output order: the send with its queue and its sequence there, the
// publish with its topic and copies, and the batch message each was for.
func TestBrowserInvocationEmits(t *testing.T) {
	t.Parallel()
	ts, account, token, c := setup(t)
	ctx := context.Background()
	createQueue(t, c, "in", 1)
	createQueue(t, c, "out", 5)
	createQueue(t, c, "audited", 5)
	if _, err := c.Topics.Create(ctx, "audit"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Topics.Subscribe(ctx, "audit", "audited"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Functions.Deploy(ctx, "relay", buildExample(t, "relay"), client.DeployOptions{Alias: "live", MemoryMB: 32,
		Emits: []string{"out", "audit"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Triggers.Put(ctx, client.Trigger{Name: "in-relay", Kind: "queue", Function: "relay", Queue: "in", BatchSize: 1}); err != nil {
		t.Fatalf("put trigger: %v", err)
	}
	seq, err := c.MQ.Send(ctx, "in", map[string]any{"emit": []map[string]any{
		{"queue": "out", "body": "a"}, {"topic": "audit", "body": "t", "batch": true}}})
	if err != nil {
		t.Fatal(err)
	}
	var inv client.Invocation
	waitFor(t, "the relay's invocation", func() bool {
		list, err := c.Invocations.List(ctx, client.InvocationsOptions{Function: "relay"})
		if err != nil || len(list) == 0 {
			return false
		}
		inv = list[0]
		return true
	})
	if inv.Outcome != "success" || inv.Emitted != 2 || inv.Emits != nil {
		t.Fatalf("listed invocation %+v: want a success that emitted 2, without the emits (lists leave them out)", inv)
	}
	inv, err = c.Invocations.Get(ctx, inv.ID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.MQ.Peek(ctx, "out", 10)
	if err != nil || len(out) != 1 {
		t.Fatalf("peek out: %+v, %v", out, err)
	}
	forSeq := fmt.Sprint(seq)
	if len(inv.Emits) != 2 || inv.Emits[0].Queue != "out" || inv.Emits[0].Sequence == nil || *inv.Emits[0].Sequence != out[0].Sequence ||
		inv.Emits[0].For != forSeq || inv.Emits[1].Topic != "audit" || inv.Emits[1].Copies == nil || *inv.Emits[1].Copies != 1 || inv.Emits[1].For != "" {
		b, _ := json.Marshal(inv.Emits)
		t.Fatalf("GET invocation emits %s; want out as sequence %d for %s, then audit with 1 copy", b, out[0].Sequence, forSeq)
	}

	p := newPage(t)
	p.signIn(ts.URL, account, token)
	p.do("open the invocation", chromedp.Navigate(fmt.Sprintf("%s/console/#/invocations/%d", ts.URL, inv.ID)), chromedp.WaitVisible(chromedp.CSS("#invocation-emits")))
	rows := p.eval(`[...document.querySelectorAll("#invocation-emits tbody tr")].map((r) => r.dataset.emit + "|" + r.textContent).join("\n")`)
	want := fmt.Sprintf("queue:out:%d|queue outsequence %d%s\ntopic:audit|topic audit1 copythe batch", out[0].Sequence, out[0].Sequence, forSeq)
	if rows != want {
		t.Errorf("emitted messages table:\n%s\nwant:\n%s", rows, want)
	}
	p.shot("invocation-emits")
}
