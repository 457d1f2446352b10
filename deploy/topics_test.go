package deploy_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/client/clienttest"
	"github.com/sluicehq/sluice/functions/manifest"
)

// applyVia applies m to c's account through the database ("db") or the
// HTTP API ("api").
func applyVia(ctx context.Context, via string, srv *clienttest.Server, c *client.Client, m *manifest.Manifest) ([]string, error) {
	if via == "db" {
		return applyDB(ctx, srv, c.Account(), m)
	}
	return applyAPI(ctx, c, m)
}

// Topics in a manifest: created, their subscribers subscribed (owned by
// the manifest); a subscriber dropped from the manifest is unsubscribed,
// one made through the API is left alone; the topic is never deleted.
// Both targets make the same changes.
func TestApplyTopics(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"db", "api"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			srv := clienttest.NewShared(t)
			c := srv.Client(t)
			apply := func(yaml string) string {
				t.Helper()
				changes, err := applyVia(ctx, via, srv, c, parseManifest(t, yaml))
				if err != nil {
					t.Fatalf("apply: %v after %s", err, changeList(changes))
				}
				return changeList(changes)
			}
			v1 := "queues:\n  billing: {}\n  shipping: {}\n  audit: {}\ntopics:\n  orders: {subscribers: [billing, shipping]}\n"
			got := apply(v1)
			for _, w := range []string{"+ topic orders (create): subscribers billing,shipping"} {
				if !strings.Contains(got, w) {
					t.Errorf("first apply %q lacks %q", got, w)
				}
			}
			if again := apply(v1); again != "" {
				t.Errorf("second apply changed %s", again)
			}
			// A subscription made by hand stays when the manifest drops others.
			if _, err := c.Topics.Subscribe(ctx, "orders", "audit"); err != nil {
				t.Fatal(err)
			}
			got = apply("queues:\n  billing: {}\n  shipping: {}\n  audit: {}\ntopics:\n  orders: {subscribers: [billing]}\n")
			if got != "~ topic orders (update): subscribers billing,shipping → billing" {
				t.Errorf("edited apply: %s", got)
			}
			tp, err := c.Topics.Get(ctx, "orders")
			if err != nil || len(tp.Subscriptions) != 2 || tp.Subscriptions[0].Queue != "audit" || tp.Subscriptions[0].Source != "api" ||
				tp.Subscriptions[1].Queue != "billing" || tp.Subscriptions[1].Source != "manifest" {
				t.Fatalf("topic after edit: %+v %v", tp, err)
			}
			// Topics leaving the manifest keep existing, without the manifest's subscriptions.
			if got := apply("queues:\n  billing: {}\n  shipping: {}\n  audit: {}\n"); got != "~ topic orders (update): subscribers billing → (none)" {
				t.Errorf("apply without topics: %s", got)
			}
			if _, err := c.Topics.Get(ctx, "orders"); err != nil {
				t.Errorf("topic gone: %v", err)
			}
			// A subscriber that is not a queue fails the apply.
			_, applyErr := applyVia(ctx, via, srv, c, parseManifest(t, "topics:\n  orders: {subscribers: [missing]}\n"))
			if applyErr == nil || !strings.Contains(applyErr.Error(), "missing") {
				t.Errorf("missing subscriber: %v", applyErr)
			}
		})
	}
}

// A manifest may declare a queue and its dead-letter queue together, in
// any order of names; both targets apply it the same way.
func TestApplyDeadLetterQueue(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"db", "api"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			srv := clienttest.NewShared(t)
			c := srv.Client(t)
			apply := func(yaml string) string {
				t.Helper()
				changes, err := applyVia(ctx, via, srv, c, parseManifest(t, yaml))
				if err != nil {
					t.Fatalf("apply: %v after %s", err, changeList(changes))
				}
				return changeList(changes)
			}
			v1 := "queues:\n  a-work: {dead_letter_queue: z-dead}\n  z-dead: {}\n"
			if got := apply(v1); got != "+ queue a-work (create): dead_letter_queue z-dead; + queue z-dead (create)" {
				t.Errorf("first apply: %s", got)
			}
			if q, err := c.Queues.Get(ctx, "a-work"); err != nil || q.DeadLetterQueue != "z-dead" {
				t.Fatalf("a-work: %+v %v", q, err)
			}
			if got := apply(v1); got != "" {
				t.Errorf("second apply: %s", got)
			}
			if got := apply("queues:\n  a-work: {dead_letter_queue: \"\"}\n  z-dead: {}\n"); got != "~ queue a-work (update): dead_letter_queue z-dead → (none)" {
				t.Errorf("cleared: %s", got)
			}
			// A chain whose names sort against it is deleted users first:
			// the queue core refuses to delete a dead_letter_queue in use.
			chain := "queues:\n  c-first: {dead_letter_queue: b-mid}\n  b-mid: {dead_letter_queue: a-last}\n  a-last: {}\n"
			apply(chain)
			if got := apply("queues:\n  other: {}\n"); !strings.Contains(got, "- queue a-last (delete)") || !strings.Contains(got, "- queue c-first (delete)") {
				t.Errorf("chain deleted: %s", got)
			}
			for _, q := range []string{"a-last", "b-mid", "c-first", "a-work", "z-dead"} {
				if _, err := c.Queues.Get(ctx, q); !errors.Is(err, client.ErrQueueNotFound) {
					t.Errorf("%s after its delete: %v", q, err)
				}
			}
		})
	}
}
