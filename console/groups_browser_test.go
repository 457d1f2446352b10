package console_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/client"
)

// A fifo queue's page shows its group counts, and its message list the
// group of each message (only each group's head is receivable, so peek
// shows the heads).
func TestBrowserFifoQueueGroups(t *testing.T) {
	t.Parallel()
	ts, account, token, c := setup(t)
	ctx := context.Background()
	if _, err := c.Queues.Create(ctx, "orders", client.QueueSettings{Fifo: client.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"customer-17", "customer-17", "customer-42"} {
		if _, err := c.MQ.Send(ctx, "orders", map[string]string{"for": g}, client.SendOptions{Group: g}); err != nil {
			t.Fatal(err)
		}
	}
	p := newPage(t)
	p.signIn(ts.URL, account, token)
	p.do("open the queue", chromedp.Navigate(ts.URL+"/console/#/queues/orders/messages"), chromedp.WaitVisible(chromedp.CSS("#messages")))
	p.wait("two heads peeked", `document.querySelectorAll("#messages tr[data-sequence]").length === 2`)
	p.wait("group column", `document.querySelector('#messages td[data-group="customer-17"]') !== null && document.querySelector('#messages td[data-group="customer-42"]') !== null`)
	p.wait("group counts", `(document.querySelector('#queue-counts [data-stat="groups"] b') || {}).textContent === "2" &&
		(document.querySelector('#queue-counts [data-stat="grouped_waiting"] b') || {}).textContent === "1"`)
	p.shot("fifo-groups")
}

// The send form's Group field sends into a group (a fifo queue refuses a
// message without one, and says so).
func TestBrowserSendWithGroup(t *testing.T) {
	t.Parallel()
	ts, account, token, c := setup(t)
	ctx := context.Background()
	if _, err := c.Queues.Create(ctx, "orders", client.QueueSettings{Fifo: client.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	p := newPage(t)
	p.signIn(ts.URL, account, token)
	p.do("open the queue", chromedp.Navigate(ts.URL+"/console/#/queues/orders/messages"), chromedp.WaitVisible(chromedp.CSS("#message-group")))
	p.fill("#message-body", `{"order": 9}`)
	p.do("send without a group", chromedp.Click(chromedp.CSS("#send-message")))
	p.wait("refused", `document.getElementById("send-result").textContent.includes("fifo queue")`)
	p.fill("#message-group", "customer-17")
	p.do("send with a group", chromedp.Click(chromedp.CSS("#send-message")))
	p.wait("sent", `document.getElementById("send-result").textContent.includes("sequence")`)
	p.wait("peeked with its group", `document.querySelector('#messages td[data-group="customer-17"]') !== null`)
	ms, err := c.MQ.Peek(ctx, "orders", 10)
	if err != nil || len(ms) != 1 || ms[0].Group != "customer-17" {
		t.Fatalf("peek through the API: %+v, %v", ms, err)
	}
}
