package pgqueue_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
)

func TestQueueLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, err := e.c.CreateQueue(e.ctx, acct, "emails", pgqueue.Settings{MaxReceiveCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := pgqueue.DefaultSettings()
	want.MaxReceiveCount = 3
	if q.Settings != want || q.Name != "emails" || q.Account != acct || q.ID == 0 {
		t.Fatalf("created %+v, want settings %+v", q, want)
	}
	if _, err := e.c.CreateQueue(e.ctx, acct, "emails", pgqueue.Settings{}); !errors.Is(err, pgqueue.ErrQueueExists) {
		t.Fatalf("second create: %v, want ErrQueueExists", err)
	}
	got, err := e.c.GetQueue(e.ctx, acct, "emails")
	if err != nil || got.ID != q.ID {
		t.Fatalf("get: %+v %v", got, err)
	}
	s := got.Settings
	s.Delay = 2 * time.Second
	s.VisibilityTimeout = 0
	up, err := e.c.UpdateQueue(e.ctx, acct, "emails", s)
	if err != nil || up.Settings != s {
		t.Fatalf("update: %+v %v, want %+v", up.Settings, err, s)
	}
	e.queue("alerts", pgqueue.Settings{})
	list, err := e.c.ListQueues(e.ctx, acct)
	if err != nil || len(list) != 2 || list[0].Name != "alerts" || list[1].Name != "emails" {
		t.Fatalf("list: %+v %v", list, err)
	}
	if err := e.c.DeleteQueue(e.ctx, acct, "emails"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.DeleteQueue(e.ctx, acct, "emails"); !errors.Is(err, pgqueue.ErrQueueNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := e.c.GetQueue(e.ctx, acct, "emails"); !errors.Is(err, pgqueue.ErrQueueNotFound) {
		t.Fatalf("get deleted: %v", err)
	}
}

func TestAccounts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const other = "000000000042"
	if _, err := e.c.CreateQueue(e.ctx, other, "q", pgqueue.Settings{}); !errors.Is(err, pgqueue.ErrAccountNotFound) {
		t.Fatalf("queue in missing account: %v", err)
	}
	if err := e.c.CreateAccount(e.ctx, "42", "x"); !errors.Is(err, pgqueue.ErrInvalidName) {
		t.Fatalf("bad account number: %v", err)
	}
	if err := e.c.CreateAccount(e.ctx, other, "other"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.CreateAccount(e.ctx, other, "other"); !errors.Is(err, pgqueue.ErrAccountExists) {
		t.Fatalf("account twice: %v", err)
	}
	// The same queue name in two accounts is two queues.
	e.queue("q", pgqueue.Settings{})
	if _, err := e.c.CreateQueue(e.ctx, other, "q", pgqueue.Settings{}); err != nil {
		t.Fatal(err)
	}
	e.send("q", `"default"`)
	if _, err := e.c.Send(e.ctx, other, "q", pgqueue.NewMessage{Body: json.RawMessage(`"other"`)}); err != nil {
		t.Fatal(err)
	}
	msgs, err := e.c.Receive(e.ctx, other, "q", pgqueue.ReceiveOptions{Max: 10})
	if err != nil || len(msgs) != 1 || string(msgs[0].Body) != `"other"` {
		t.Fatalf("receive in other account: %v %v", msgs, err)
	}
}

func TestInvalidNamesAndArguments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("small", pgqueue.Settings{MaxMessageBytes: 100})

	_, err := e.c.CreateQueue(e.ctx, acct, "a/b", pgqueue.Settings{})
	if !errors.Is(err, pgqueue.ErrInvalidName) {
		t.Fatalf("create a/b: %v", err)
	}
	if want := `pgqueue: invalid queue name "a/b": use 1-80 characters from A-Z a-z 0-9 _ -`; err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
	var qerr *pgqueue.Error
	if !errors.As(err, &qerr) || qerr.Kind != pgqueue.ErrInvalidName {
		t.Fatalf("errors.As: %#v", err)
	}
	for _, name := range []string{"", strings.Repeat("x", 81), "é", "a b"} {
		if _, err := e.c.CreateQueue(e.ctx, acct, name, pgqueue.Settings{}); !errors.Is(err, pgqueue.ErrInvalidName) {
			t.Errorf("create %q: %v, want ErrInvalidName", name, err)
		}
		if _, err := e.c.Send(e.ctx, acct, name, pgqueue.NewMessage{Body: body(1)}); !errors.Is(err, pgqueue.ErrInvalidName) {
			t.Errorf("send to %q: %v, want ErrInvalidName", name, err)
		}
	}
	if _, err := e.c.CreateQueue(e.ctx, acct, strings.Repeat("x", 80), pgqueue.Settings{}); err != nil {
		t.Errorf("80-character name: %v", err)
	}
	_, err = e.c.Send(e.ctx, acct, "missing", pgqueue.NewMessage{Body: body(1)})
	if !errors.Is(err, pgqueue.ErrQueueNotFound) || !strings.Contains(err.Error(), `queue "missing" not found in account 000000000001`) {
		t.Fatalf("send to missing: %v", err)
	}

	big := json.RawMessage(`"` + strings.Repeat("x", 200) + `"`)
	_, err = e.c.Send(e.ctx, acct, "small", pgqueue.NewMessage{Body: big})
	if !errors.Is(err, pgqueue.ErrMessageTooLarge) || !strings.Contains(err.Error(), "body is 202 bytes, queue \"small\" allows at most 100 bytes") {
		t.Fatalf("oversized send: %v", err)
	}
	_, err = e.c.SendBatch(e.ctx, acct, "small", []pgqueue.NewMessage{{Body: body(1)}, {Body: big}})
	if !errors.Is(err, pgqueue.ErrMessageTooLarge) {
		t.Fatalf("oversized batch: %v", err)
	}
	if s := e.stats("small"); s.Total != 0 {
		t.Fatalf("a rejected batch stored %d messages", s.Total)
	}

	cases := []struct {
		name string
		err  error
		want string
	}{
		{"bad json", func() error {
			_, err := e.c.Send(e.ctx, acct, "small", pgqueue.NewMessage{Body: json.RawMessage(`{`)})
			return err
		}(), "not valid JSON"},
		{"headers not object", func() error {
			_, err := e.c.Send(e.ctx, acct, "small", pgqueue.NewMessage{Body: body(1), Headers: json.RawMessage(`[1]`)})
			return err
		}(), "invalid headers: use a JSON object or NULL"},
		{"max too big", func() error {
			_, err := e.c.Receive(e.ctx, acct, "small", pgqueue.ReceiveOptions{Max: 1001})
			return err
		}(), "invalid max_messages 1001: use 1 to 1000"},
		{"negative max", func() error {
			_, err := e.c.Receive(e.ctx, acct, "small", pgqueue.ReceiveOptions{Max: -3})
			return err
		}(), "invalid max_messages -3: use 1 to 1000"},
		{"negative peek", func() error {
			_, err := e.c.Peek(e.ctx, acct, "small", -1)
			return err
		}(), "invalid max_messages -1: use 1 to 1000"},
		{"wait too long", func() error {
			_, err := e.c.Receive(e.ctx, acct, "small", pgqueue.ReceiveOptions{Wait: time.Minute})
			return err
		}(), "invalid wait 1m0s: use 0 to 20s"},
		{"negative delay", func() error {
			_, err := e.c.Send(e.ctx, acct, "small", pgqueue.NewMessage{Body: body(1), Delay: -time.Second})
			return err
		}(), "invalid delay -1s"},
		{"bad option", func() error {
			_, err := e.c.CreateQueue(e.ctx, acct, "x", pgqueue.Settings{MaxReceiveCount: 5000})
			return err
		}(), "invalid max_receive_count 5000: use 1 to 1000"},
	}
	for _, c := range cases {
		if !errors.Is(c.err, pgqueue.ErrInvalidArgument) || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrInvalidArgument containing %q", c.name, c.err, c.want)
		}
	}
}

func TestTopicsFanOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("email", pgqueue.Settings{})
	e.queue("stock", pgqueue.Settings{})
	e.queue("audit", pgqueue.Settings{})
	if err := e.c.CreateTopic(e.ctx, acct, "orders"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.CreateTopic(e.ctx, acct, "orders"); !errors.Is(err, pgqueue.ErrTopicExists) {
		t.Fatalf("topic twice: %v", err)
	}
	for _, q := range []string{"email", "stock", "audit"} {
		if err := e.c.Subscribe(e.ctx, acct, "orders", q); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.c.Subscribe(e.ctx, acct, "orders", "email"); err != nil {
		t.Fatalf("subscribe twice: %v", err)
	}
	if err := e.c.Unsubscribe(e.ctx, acct, "orders", "audit"); err != nil {
		t.Fatal(err)
	}
	subs, err := e.c.Subscriptions(e.ctx, acct, "orders")
	if err != nil || len(subs) != 2 || subs[0] != "email" || subs[1] != "stock" {
		t.Fatalf("subscriptions: %v %v", subs, err)
	}
	n, err := e.c.Publish(e.ctx, acct, "orders", json.RawMessage(`{"order":7}`), json.RawMessage(`{"k":"v"}`))
	if err != nil || n != 2 {
		t.Fatalf("publish: %d %v", n, err)
	}
	for _, q := range []string{"email", "stock"} {
		msgs := e.receive(q, pgqueue.ReceiveOptions{Max: 10})
		if len(msgs) != 1 || string(msgs[0].Body) != `{"order": 7}` || string(msgs[0].Headers) != `{"k": "v"}` {
			t.Fatalf("%s got %+v", q, msgs)
		}
		// Each copy has its own lease and retries.
		if _, err := e.c.Nack(e.ctx, acct, q, []pgqueue.Nack{{Sequence: msgs[0].Sequence, Receipt: msgs[0].Receipt}}); err != nil {
			t.Fatal(err)
		}
	}
	if s := e.stats("audit"); s.Total != 0 {
		t.Fatalf("unsubscribed queue got %d messages", s.Total)
	}
	if _, err := e.c.Publish(e.ctx, acct, "nope", body(1), nil); !errors.Is(err, pgqueue.ErrTopicNotFound) {
		t.Fatalf("publish to missing topic: %v", err)
	}
	// A copy too large for any subscriber rejects the whole publish.
	if _, err := e.c.UpdateQueue(e.ctx, acct, "stock", pgqueue.Settings{VisibilityTimeout: time.Second, MaxReceiveCount: 5, Retention: time.Hour, MaxMessageBytes: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Publish(e.ctx, acct, "orders", json.RawMessage(`{"order":8}`), nil); !errors.Is(err, pgqueue.ErrMessageTooLarge) {
		t.Fatalf("publish too large: %v", err)
	}
	if s := e.stats("email"); s.Total != 1 {
		t.Fatalf("failed publish left %d messages in email", s.Total)
	}
	if err := e.c.DeleteTopic(e.ctx, acct, "orders"); err != nil {
		t.Fatal(err)
	}
}

func TestQueueOptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Given zeros stay zeros; options left out take their defaults.
	q, err := e.c.CreateQueueWithOptions(e.ctx, acct, "raw", pgqueue.QueueOptions{"visibility_timeout_seconds": 0, "max_receive_count": 2})
	if err != nil {
		t.Fatal(err)
	}
	want := pgqueue.DefaultSettings()
	want.VisibilityTimeout, want.MaxReceiveCount = 0, 2
	if q.Settings != want || q.Name != "raw" || q.Account != acct || q.ID == 0 {
		t.Fatalf("created %+v, want settings %+v", q, want)
	}
	if _, err := e.c.CreateQueueWithOptions(e.ctx, acct, "raw", nil); !errors.Is(err, pgqueue.ErrQueueExists) {
		t.Fatalf("second create: %v, want ErrQueueExists", err)
	}
	if _, err := e.c.CreateQueueWithOptions(e.ctx, acct, "bad", pgqueue.QueueOptions{"retention_seconds": 1}); !errors.Is(err, pgqueue.ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "retention_seconds") {
		t.Fatalf("out of range: %v, want ErrInvalidArgument naming the option", err)
	}
	if _, err := e.c.CreateQueueWithOptions(e.ctx, acct, "bad", pgqueue.QueueOptions{"colour": 1}); !errors.Is(err, pgqueue.ErrInvalidArgument) {
		t.Fatalf("unknown option: %v, want ErrInvalidArgument", err)
	}
	if _, err := e.c.CreateQueueWithOptions(e.ctx, acct, "no such name!", nil); !errors.Is(err, pgqueue.ErrInvalidName) {
		t.Fatalf("invalid name: %v, want ErrInvalidName", err)
	}

	// A patch changes what it names and keeps the rest.
	up, err := e.c.PatchQueue(e.ctx, acct, "raw", pgqueue.QueueOptions{"delay_seconds": 7})
	want.Delay = 7 * time.Second
	if err != nil || up.Settings != want || up.ID != q.ID {
		t.Fatalf("patch: %+v %v, want %+v", up.Settings, err, want)
	}
	if up, err := e.c.PatchQueue(e.ctx, acct, "raw", nil); err != nil || up.Settings != want {
		t.Fatalf("empty patch: %+v %v, want %+v", up.Settings, err, want)
	}
	if _, err := e.c.PatchQueue(e.ctx, acct, "nope", pgqueue.QueueOptions{"delay_seconds": 1}); !errors.Is(err, pgqueue.ErrQueueNotFound) {
		t.Fatalf("patch missing queue: %v, want ErrQueueNotFound", err)
	}
	if _, err := e.c.PatchQueue(e.ctx, acct, "raw", pgqueue.QueueOptions{"max_receive_count": 0}); !errors.Is(err, pgqueue.ErrInvalidArgument) {
		t.Fatalf("patch out of range: %v, want ErrInvalidArgument", err)
	}
}

func TestListAndAllStats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const other = "000000000042"
	if err := e.c.CreateAccount(e.ctx, other, "other"); err != nil {
		t.Fatal(err)
	}
	e.queue("b", pgqueue.Settings{})
	e.queue("a", pgqueue.Settings{})
	if _, err := e.c.CreateQueue(e.ctx, other, "c", pgqueue.Settings{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := e.c.Send(e.ctx, acct, "b", pgqueue.NewMessage{Body: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.c.Send(e.ctx, acct, "b", pgqueue.NewMessage{Body: json.RawMessage(`{}`), Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)

	list, err := e.c.ListStats(e.ctx, acct)
	if err != nil || len(list) != 2 || list[0].Queue != "a" || list[1].Queue != "b" {
		t.Fatalf("ListStats: %+v %v, want queues a and b", list, err)
	}
	b := list[1]
	if b.Account != acct || b.Ready != 2 || b.Delayed != 1 || b.Total != 3 || b.OldestReadyAge <= 0 {
		t.Fatalf("stats of b: %+v", b)
	}
	one, err := e.c.Stats(e.ctx, acct, "b")
	if err != nil || one.Ready != b.Ready || one.Delayed != b.Delayed || one.Total != b.Total {
		t.Fatalf("Stats(b) = %+v %v, ListStats gave %+v", one, err, b.Stats)
	}
	if list[0].Stats != (pgqueue.Stats{}) {
		t.Fatalf("stats of empty queue a: %+v", list[0])
	}
	// StatsOf: the named queues only, in the order given, names that are
	// not queues of the account left out, each as ListStats counts it.
	some, err := e.c.StatsOf(e.ctx, acct, []string{"b", "nope", "c", "a"})
	ageless := func(s pgqueue.QueueStats) pgqueue.QueueStats { s.OldestReadyAge = 0; return s }
	if err != nil || len(some) != 2 || ageless(some[0]) != ageless(b) || some[0].OldestReadyAge < b.OldestReadyAge || some[1] != list[0] {
		t.Fatalf("StatsOf(b, nope, c, a) = %+v %v, want b's and a's stats as ListStats gave them: %+v", some, err, list)
	}
	if some, err := e.c.StatsOf(e.ctx, acct, nil); err != nil || len(some) != 0 {
		t.Fatalf("StatsOf of no queue: %+v %v", some, err)
	}
	if list, err := e.c.ListStats(e.ctx, "000000000099"); err != nil || len(list) != 0 {
		t.Fatalf("ListStats of an account without queues: %+v %v", list, err)
	}

	all, err := e.c.AllStats(e.ctx)
	if err != nil || len(all) != 3 {
		t.Fatalf("AllStats: %+v %v", all, err)
	}
	if all[0].Queue != "a" || all[1].Queue != "b" || all[2].Account != other || all[2].Queue != "c" {
		t.Fatalf("AllStats order: %+v", all)
	}
}

func TestEnsureAccountTx(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const number = "000000000043"
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(e.ctx)
	for range 2 {
		if err := e.c.EnsureAccountTx(e.ctx, tx, number); err != nil {
			t.Fatalf("EnsureAccountTx: %v", err)
		}
	}
	// Uncommitted, the account is not there yet for others.
	if _, err := e.c.CreateQueue(e.ctx, number, "q", pgqueue.Settings{}); !errors.Is(err, pgqueue.ErrAccountNotFound) {
		t.Fatalf("queue before commit: %v, want ErrAccountNotFound", err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.CreateQueue(e.ctx, number, "q", pgqueue.Settings{}); err != nil {
		t.Fatalf("queue after commit: %v", err)
	}
	// An existing account, named by CreateAccount, keeps its name.
	if err := e.c.CreateAccount(e.ctx, "000000000044", "named"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.EnsureAccountTx(e.ctx, e.pool, "000000000044"); err != nil {
		t.Fatal(err)
	}
	if name := e.one("SELECT name FROM accounts WHERE number = '000000000044'"); name != "named" {
		t.Fatalf("name %v, want named", name)
	}
	if err := e.c.EnsureAccountTx(e.ctx, e.pool, "12"); err == nil {
		t.Fatal("EnsureAccountTx accepted an invalid account number")
	}
}

// GetQueues reads many queues in one statement; missing ones are absent.
func TestGetQueues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.c.CreateQueue(e.ctx, acct, "a", pgqueue.Settings{VisibilityTimeout: 7 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.CreateQueue(e.ctx, acct, "b", pgqueue.Settings{MaxReceiveCount: 9}); err != nil {
		t.Fatal(err)
	}
	got, err := e.c.GetQueues(e.ctx, []pgqueue.QueueRef{{Account: acct, Name: "a"}, {Account: acct, Name: "b"}, {Account: acct, Name: "gone"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d queues, want 2 (a and b; gone is absent)", len(got))
	}
	if q := got[pgqueue.QueueRef{Account: acct, Name: "a"}]; q.Settings.VisibilityTimeout != 7*time.Second {
		t.Errorf("a's visibility timeout = %s, want 7s", q.Settings.VisibilityTimeout)
	}
	if q := got[pgqueue.QueueRef{Account: acct, Name: "b"}]; q.Settings.MaxReceiveCount != 9 {
		t.Errorf("b's max receive count = %d, want 9", q.Settings.MaxReceiveCount)
	}
}

// OptionRanges are the ranges the SQL API holds the queue options to: each
// bound is accepted, one past it refused naming the range.
func TestOptionRanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for name, r := range pgqueue.OptionRanges {
		for _, v := range []int64{r.Min, r.Max} {
			tx := e.schemaTx()
			if _, err := tx.Exec(e.ctx, "SELECT create_queue('q', jsonb_build_object($1::text, $2::bigint))", name, v); err != nil {
				t.Errorf("%s = %d: %v, want it accepted", name, v, err)
			}
			tx.Rollback(e.ctx)
		}
		for _, v := range []int64{r.Min - 1, r.Max + 1} {
			err := e.sqlErr(fmt.Sprintf(`SELECT create_queue('q', '{"%s": %d}')`, name, v))
			if want := fmt.Sprintf("%d to %d", r.Min, r.Max); !strings.Contains(err.Message, want) {
				t.Errorf("%s = %d: %q, want it refused naming %s", name, v, err.Message, want)
			}
		}
	}
}
