package pgqueue_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
)

func TestTopicFiltersListAndBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("billing", pgqueue.Settings{})
	e.queue("shipping", pgqueue.Settings{})
	e.queue("all", pgqueue.Settings{})
	if err := e.c.CreateTopic(e.ctx, acct, "orders"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.CreateTopic(e.ctx, acct, "empty"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.SubscribeWith(e.ctx, acct, "orders", "billing", pgqueue.SubscribeOptions{Filter: map[string]string{"type": "order"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.SubscribeWith(e.ctx, acct, "orders", "shipping", pgqueue.SubscribeOptions{Filter: map[string]string{"type": "order", "region": "eu"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.SubscribeWith(e.ctx, acct, "orders", "all", pgqueue.SubscribeOptions{}); err != nil {
		t.Fatal(err)
	}
	ts, err := e.c.ListTopics(e.ctx, acct)
	if err != nil || len(ts) != 2 || ts[0].Name != "empty" || len(ts[0].Subscriptions) != 0 || ts[1].Name != "orders" || len(ts[1].Subscriptions) != 3 {
		t.Fatalf("list: %+v %v", ts, err)
	}
	if s := ts[1].Subscriptions; s[0].Queue != "all" || s[0].Filter != nil || s[0].Source != pgqueue.SourceAPI || s[1].Queue != "billing" || s[1].Filter["type"] != "order" {
		t.Fatalf("subscriptions: %+v", s)
	}
	if _, err := e.c.GetTopic(e.ctx, acct, "nope"); !errors.Is(err, pgqueue.ErrTopicNotFound) {
		t.Fatalf("get missing topic: %v", err)
	}

	ns, err := e.c.PublishBatch(e.ctx, acct, "orders", []pgqueue.Publication{
		{Body: json.RawMessage(`1`)},
		{Body: json.RawMessage(`2`), Headers: json.RawMessage(`{"type":"order"}`)},
		{Body: json.RawMessage(`3`), Headers: json.RawMessage(`{"type":"order","region":"eu","x":1}`)},
		{Body: json.RawMessage(`4`), Headers: json.RawMessage(`{"type":"refund"}`)},
	})
	if err != nil || len(ns) != 4 || ns[0] != 1 || ns[1] != 2 || ns[2] != 3 || ns[3] != 1 {
		t.Fatalf("publish batch: %v %v", ns, err)
	}
	for q, want := range map[string]int64{"all": 4, "billing": 2, "shipping": 1} {
		if s := e.stats(q); s.Total != want {
			t.Fatalf("%s holds %d, want %d", q, s.Total, want)
		}
	}
	// A delay keeps every copy invisible.
	if _, err := e.c.PublishBatch(e.ctx, acct, "orders", []pgqueue.Publication{{Body: json.RawMessage(`5`), Delay: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	if s := e.stats("all"); s.Delayed != 1 {
		t.Fatalf("delayed = %d", s.Delayed)
	}
	// Subscribing again replaces the filter.
	if err := e.c.Subscribe(e.ctx, acct, "orders", "billing"); err != nil {
		t.Fatal(err)
	}
	if tp, err := e.c.GetTopic(e.ctx, acct, "orders"); err != nil || tp.Subscriptions[1].Filter != nil {
		t.Fatalf("resubscribed: %+v %v", tp, err)
	}

	if err := e.c.SubscribeWith(e.ctx, acct, "orders", "all", pgqueue.SubscribeOptions{Source: pgqueue.SourceManifest}); err != nil {
		t.Fatal(err)
	}
	if tp, err := e.c.GetTopic(e.ctx, acct, "orders"); err != nil || tp.Subscriptions[0].Source != pgqueue.SourceManifest {
		t.Fatalf("manifest source: %+v %v", tp, err)
	}

	// Bad inputs.
	if err := e.c.SubscribeWith(e.ctx, acct, "orders", "all", pgqueue.SubscribeOptions{Source: "cli"}); !errors.Is(err, pgqueue.ErrInvalidArgument) {
		t.Errorf("bad source: %v", err)
	}
	for name, err := range map[string]error{
		"missing topic": e.c.SubscribeWith(e.ctx, acct, "nope", "all", pgqueue.SubscribeOptions{}),
		"missing queue": e.c.SubscribeWith(e.ctx, acct, "orders", "nope", pgqueue.SubscribeOptions{}),
	} {
		if !errors.Is(err, pgqueue.ErrTopicNotFound) && !errors.Is(err, pgqueue.ErrQueueNotFound) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := e.c.PublishBatch(e.ctx, acct, "nope", []pgqueue.Publication{{Body: json.RawMessage(`1`)}}); !errors.Is(err, pgqueue.ErrTopicNotFound) {
		t.Errorf("publish to missing topic: %v", err)
	}
	if _, err := e.c.PublishBatch(e.ctx, acct, "orders", nil); !errors.Is(err, pgqueue.ErrInvalidArgument) {
		t.Errorf("empty batch: %v", err)
	}
	big := map[string]string{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"} {
		big[k] = k
	}
	if err := e.c.SubscribeWith(e.ctx, acct, "orders", "all", pgqueue.SubscribeOptions{Filter: big}); !errors.Is(err, pgqueue.ErrInvalidArgument) {
		t.Errorf("11 keys: %v", err)
	}
}

// The SQL forms of topics: filters must map names to strings.
func TestTopicSQLAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec(`SELECT create_queue('billing')`)
	e.exec(`SELECT create_topic('orders')`)
	e.exec(`SELECT subscribe('orders', 'billing', '{"type": "order"}')`)
	if n := e.one(`SELECT publish('orders', '1', '{"type": "other"}')`); n != int32(0) {
		t.Fatalf("filtered publish made %v copies", n)
	}
	if n := len(e.rows(`SELECT * FROM publish_batch('orders', ARRAY['1', '2']::jsonb[], 0)`)); n != 2 {
		t.Fatalf("publish_batch returned %d rows", n)
	}
	if n := len(e.rows(`SELECT * FROM list_topics()`)); n != 1 {
		t.Fatalf("list_topics returned %d rows", n)
	}
	for _, bad := range []string{`'[1]'`, `'{"type": 1}'`, `'"x"'`} {
		if err := e.tryExec(`SELECT subscribe('orders', 'billing', ` + bad + `)`); !errors.Is(err, pgqueue.ErrInvalidArgument) {
			t.Errorf("filter %s: %v", bad, err)
		}
	}
	if v := e.one(`SELECT delete_topic('orders')`); v != true {
		t.Fatalf("delete_topic = %v", v)
	}
	if v := e.one(`SELECT delete_topic('orders')`); v != false {
		t.Fatalf("delete_topic again = %v", v)
	}
}

// tryExec runs a statement in the test schema and returns its error as a
// *pgqueue.Error when it carries a Sluice SQLSTATE.
func (e *env) tryExec(query string) error {
	e.t.Helper()
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	defer tx.Rollback(e.ctx)
	if _, err := tx.Exec(e.ctx, "SET LOCAL search_path = "+pgxIdent(e.schema)); err != nil {
		e.t.Fatal(err)
	}
	_, err = tx.Exec(e.ctx, query)
	if qe, ok := pgqueue.AsError(err); ok {
		return qe
	}
	return err
}
