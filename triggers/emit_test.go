package triggers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/triggers"
)

func relayCaps(patterns ...string) functions.Config {
	return functions.Config{Capabilities: functions.Capabilities{Emits: patterns},
		Env: map[string]string{"RELAY_CRON_QUEUE": "ticks"}}
}

// messages counts a queue's messages (any state).
func (e *env) messages(queue string) int64 {
	e.t.Helper()
	return e.scalar(`SELECT count(*) FROM {{schema}}.messages m JOIN {{schema}}.queues q ON q.id = m.queue_id WHERE q.name = $1`, queue)
}

// Emits go out with their message's ack: an emit for a message that
// failed (retry that ends in the DLQ, permanent) or of a batch that failed
// as a whole is dropped; an emit without for goes out with the batch; a
// topic emit copies to every subscriber. The invocation record counts them.
func TestEmitFollowsItsMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("relay", "relay", relayCaps("out", "audit"))
	e.createQueue("in", pgqueue.Settings{MaxReceiveCount: 1})
	e.createQueue("whole", pgqueue.Settings{MaxReceiveCount: 1})
	e.createQueue("out", pgqueue.Settings{})
	e.createQueue("audited", pgqueue.Settings{})
	ctx := context.Background()
	if err := e.queue.CreateTopic(ctx, acct, "audit"); err != nil {
		t.Fatal(err)
	}
	if err := e.queue.Subscribe(ctx, acct, "audit", "audited"); err != nil {
		t.Fatal(err)
	}
	e.send("in",
		`{"emit":[{"queue":"out","body":"ok-0"}]}`,
		`{"emit":[{"queue":"out","body":"lost-1"}],"fail":"retry"}`,
		`{"emit":[{"queue":"out","body":"lost-2"}],"fail":"permanent"}`,
		`{"emit":[{"topic":"audit","body":"batch-3","batch":true},{"queue":"out","body":"ok-3"}]}`)
	e.send("whole", `{"emit":[{"queue":"out","body":"lost-4","batch":true}],"fail":"batch"}`)
	e.putTrigger(triggers.Trigger{Queue: "in", Function: "relay", BatchSize: 10, BatchWindow: 200 * time.Millisecond})
	e.putTrigger(triggers.Trigger{Queue: "whole", Function: "relay"})
	e.startEngine()

	e.waitFor("both queues to settle", 30*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.invocations`) == 2
	})
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.messages m JOIN {{schema}}.queues q ON q.id = m.queue_id
		WHERE q.name = 'out' AND m.body IN ('"ok-0"', '"ok-3"')`); got != 2 || e.messages("out") != 2 {
		t.Errorf("out holds %d messages, %d of them ok-0 and ok-3; want exactly those", e.messages("out"), got)
	}
	if got := e.messages("audited"); got != 1 {
		t.Errorf("the topic's subscriber holds %d messages, want 1", got)
	}
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE source = 'in' AND batch_size = 4
		AND acked = 2 AND dead = 2 AND emitted = 3 AND outcome = 'partial_failure'`); got != 1 {
		t.Errorf("no invocation record of the in batch with acked 2, dead 2, emitted 3")
	}
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE source = 'whole' AND emitted = 0 AND outcome = 'failure'`); got != 1 {
		t.Errorf("no invocation record of the failed batch with emitted 0")
	}
	list, err := e.triggers.Invocations().List(ctx, acct, triggers.InvocationFilter{Function: "relay"})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, inv := range list {
		total += inv.Emitted
	}
	if total != 3 {
		t.Errorf("Invocation.Emitted sums to %d, want 3", total)
	}
}

// An emit the function may not make fails its whole batch with
// invalid_output naming the target and the rule, and sends nothing: a
// target outside its emits patterns, a queue that does not exist, a body
// over the queue's max message size.
func TestEmitRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("relay", "relay", relayCaps("out-*"))
	e.createQueue("in", pgqueue.Settings{MaxReceiveCount: 1})
	e.createQueue("out-small", pgqueue.Settings{MaxMessageBytes: 64})
	e.createQueue("secret", pgqueue.Settings{})
	big := fmt.Sprintf(`"%s"`, strings.Repeat("x", 100))
	e.send("in", `{"emit":[{"queue":"secret","body":1}]}`, `{"emit":[{"queue":"out-missing","body":1}]}`,
		`{"emit":[{"queue":"out-small","body":`+big+`}]}`, `{"emit":[{"topic":"out-topic","body":1}]}`)
	e.putTrigger(triggers.Trigger{Queue: "in", Function: "relay", BatchSize: 1})
	e.startEngine()
	e.waitFor("four invocations", 30*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.invocations`) == 4
	})
	for _, want := range []string{
		"invalid_output: emit[0] to queue secret is not allowed: it matches none of the function's emits patterns out-*",
		`invalid_output: emit refused: queue "out-missing" not found`,
		"invalid_output: emit refused: message too large",
		`invalid_output: emit refused: topic "out-topic"`,
	} {
		if got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE failure_kind = 'invalid_output'
			AND outcome = 'failure' AND emitted = 0 AND dead = 1 AND starts_with(error, $1)`, want); got != 1 {
			errs := e.scalar(`SELECT count(*) FROM {{schema}}.invocations`)
			t.Errorf("no failed invocation with error %q (of %d)", want, errs)
		}
	}
	if got := e.messages("out-small") + e.messages("secret"); got != 0 {
		t.Errorf("refused emits sent %d messages", got)
	}
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.dead_letters`); got != 4 {
		t.Errorf("dead letters = %d, want the 4 refused messages", got)
	}
}

// A function with no emits capability may not emit at all.
func TestEmitDeniedByDefault(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("relay", "relay", functions.Config{})
	e.createQueue("in", pgqueue.Settings{MaxReceiveCount: 1})
	e.createQueue("out", pgqueue.Settings{})
	e.send("in", `{"emit":[{"queue":"out","body":1}]}`)
	e.putTrigger(triggers.Trigger{Queue: "in", Function: "relay"})
	e.startEngine()
	e.waitFor("the invocation", 30*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE error LIKE '%the function''s manifest declares no emits%'`) == 1
	})
	if got := e.messages("out"); got != 0 {
		t.Errorf("out holds %d messages, want none", got)
	}
}

// A cron invocation emits, each tick's emits committed with its record.
func TestCronEmit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("relay", "relay", relayCaps("ticks"))
	e.createQueue("ticks", pgqueue.Settings{})
	e.putTrigger(triggers.Trigger{Kind: triggers.KindCron, CronSpec: "* * * * * *", Function: "relay"})
	eng := e.startEngine()
	e.waitFor("two emitted ticks", 10*time.Second, func() bool { return e.messages("ticks") >= 2 })
	stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := eng.Stop(stop); err != nil {
		t.Fatal(err)
	}
	if got, want := e.messages("ticks"), e.scalar(`SELECT coalesce(sum(emitted), 0) FROM {{schema}}.invocations WHERE trigger_type = 'cron'`); got != want {
		t.Errorf("ticks holds %d messages, the invocation log counts %d emitted", got, want)
	}
}

// A dead-letter handler emits for the dead letters it handles.
func TestDLQHandlerEmit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("relay", "relay", relayCaps("recovered"))
	e.createQueue("src", pgqueue.Settings{})
	e.createQueue("recovered", pgqueue.Settings{})
	ctx := context.Background()
	e.send("src", `{"emit":[{"queue":"recovered","body":"r-0"}]}`, `{"emit":[{"queue":"recovered","body":"r-1"}],"fail":"retry"}`)
	msgs, err := e.queue.Receive(ctx, acct, "src", pgqueue.ReceiveOptions{Max: 2})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("receive: %v %v", msgs, err)
	}
	fails := make([]pgqueue.Failure, len(msgs))
	for i, m := range msgs {
		fails[i] = pgqueue.Failure{Sequence: m.Sequence, Receipt: m.Receipt, Reason: "test"}
	}
	if _, err := e.queue.Fail(ctx, acct, "src", fails); err != nil {
		t.Fatal(err)
	}
	e.putTrigger(triggers.Trigger{Queue: "src", DLQ: true, Function: "relay"})
	e.startEngine()
	e.waitFor("the handled dead letter's emit", 10*time.Second, func() bool { return e.messages("recovered") == 1 })
	e.waitFor("the handled dead letter to go", 10*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.dead_letters`) == 1
	})
	time.Sleep(300 * time.Millisecond)
	if got := e.messages("recovered"); got != 1 {
		t.Errorf("recovered holds %d messages, want 1 (the failing dead letter's emit is dropped)", got)
	}
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE trigger_type = 'dlq' AND acked = 1 AND emitted = 1`); got < 1 {
		t.Errorf("no dlq invocation record with acked 1, emitted 1")
	}
}

// A batch whose lease expired while it ran (lease extension off) is
// redelivered; the late settlement of the first delivery is refused as a
// whole and redone for what it still holds (nothing): it emits nothing,
// and its record says so. Exactly the redelivery's emit exists.
func TestEmitOfStaleDeliveryIsDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("relay", "relay", relayCaps("out"))
	e.createQueue("in", pgqueue.Settings{VisibilityTimeout: time.Second, MaxReceiveCount: 5})
	e.createQueue("out", pgqueue.Settings{})
	e.send("in", `{"emit":[{"queue":"out","body":"once"}],"sleep_first_ms":2500}`)
	tr := triggers.Trigger{Account: acct, Kind: triggers.KindQueue, Queue: "in", Function: "relay", Concurrency: 2, Enabled: true}
	tr.Name = tr.DerivedName()
	if _, err := e.triggers.Put(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	e.startEngine()
	e.waitFor("both deliveries to be recorded", 30*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.invocations`) == 2
	})
	if got := e.messages("out"); got != 1 {
		t.Errorf("out holds %d messages, want exactly 1", got)
	}
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE acked = 1 AND emitted = 1`); got != 1 {
		t.Errorf("records acking and emitting = %d, want 1 (the redelivery)", got)
	}
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE acked = 0 AND emitted = 0 AND emitted_messages IS NULL`); got != 1 {
		t.Errorf("records of the stale delivery acking and emitting nothing = %d, want 1", got)
	}
	// The record's sequence read first, then looked up in out: on Citus
	// the log and the messages are distributed by different queues, which
	// one join cannot pair.
	seq := e.scalar(`SELECT coalesce(max((i.emitted_messages -> 0 ->> 'sequence')::bigint), 0) FROM {{schema}}.invocations i
		WHERE i.emitted = 1 AND jsonb_array_length(i.emitted_messages) = 1 AND i.emitted_messages -> 0 ->> 'queue' = 'out'`)
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.messages m JOIN {{schema}}.queues q ON q.id = m.queue_id
		WHERE q.name = 'out' AND m.sequence = $1`, seq); got != 1 {
		t.Errorf("records listing the emitted message with its sequence in out: sequence %d found %d times in out, want 1 (the redelivery)", seq, got)
	}
}

// The invocation record lists the messages it emitted, in output order,
// written in the settling transaction: each send with its message's
// sequence in the target queue, each publish with its copies, and the
// message it was for.
func TestInvocationListsEmittedMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("relay", "relay", relayCaps("out", "audit"))
	e.createQueue("in", pgqueue.Settings{MaxReceiveCount: 1})
	e.createQueue("out", pgqueue.Settings{})
	e.createQueue("audited", pgqueue.Settings{})
	ctx := context.Background()
	if err := e.queue.CreateTopic(ctx, acct, "audit"); err != nil {
		t.Fatal(err)
	}
	if err := e.queue.Subscribe(ctx, acct, "audit", "audited"); err != nil {
		t.Fatal(err)
	}
	seqs := e.send("in",
		`{"emit":[{"queue":"out","body":"a"},{"topic":"audit","body":"t","batch":true},{"queue":"out","body":"b"}]}`,
		`{"emit":[{"queue":"out","body":"lost"}],"fail":"permanent"}`)
	e.putTrigger(triggers.Trigger{Queue: "in", Function: "relay", BatchSize: 10, BatchWindow: 200 * time.Millisecond})
	e.startEngine()
	e.waitFor("the batch to settle", 30*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.invocations`) >= 1
	})
	list, err := e.triggers.Invocations().List(ctx, acct, triggers.InvocationFilter{Function: "relay"})
	if err != nil || len(list) != 1 || list[0].BatchSize != 2 {
		t.Fatalf("invocations = %+v, %v; want one of both messages", list, err)
	}
	if list[0].EmittedMessages != nil {
		t.Errorf("List without ID read the emitted messages: %+v", list[0].EmittedMessages)
	}
	one, err := e.triggers.Invocations().List(ctx, acct, triggers.InvocationFilter{ID: list[0].ID})
	if err != nil || len(one) != 1 {
		t.Fatalf("invocation %d: %+v, %v", list[0].ID, one, err)
	}
	var outSeqs []int64
	for _, body := range []string{`"a"`, `"b"`} {
		outSeqs = append(outSeqs, e.scalar(`SELECT m.sequence FROM {{schema}}.messages m JOIN {{schema}}.queues q ON q.id = m.queue_id
			WHERE q.name = 'out' AND m.body = $1::jsonb`, body))
	}
	first := fmt.Sprint(seqs[0])
	want := []triggers.EmittedMessage{
		{Queue: "out", Sequence: outSeqs[0], For: first},
		{Topic: "audit", Copies: 1},
		{Queue: "out", Sequence: outSeqs[1], For: first},
	}
	got := one[0].EmittedMessages
	if len(got) != len(want) {
		t.Fatalf("emitted messages %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("emitted message %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// An emit with a group puts its message into that group of the target
// queue, which a fifo queue requires: the emitted messages of one group
// are received one at a time, in emit order.
func TestEmitIntoGroupsOfAFifoQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("relay", "relay", relayCaps("ordered"))
	e.createQueue("in", pgqueue.Settings{MaxReceiveCount: 1})
	e.createQueue("ordered", pgqueue.Settings{Fifo: true})
	e.send("in", `{"emit":[{"queue":"ordered","body":"a1","group":"a"},{"queue":"ordered","body":"a2","group":"a"},{"queue":"ordered","body":"b1","group":"b"}]}`)
	e.putTrigger(triggers.Trigger{Queue: "in", Function: "relay"})
	e.startEngine()
	e.waitFor("the emits", 30*time.Second, func() bool { return e.messages("ordered") == 3 })
	got, err := e.queue.Receive(context.Background(), acct, "ordered", pgqueue.ReceiveOptions{Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	var heads []string
	for _, m := range got {
		heads = append(heads, m.Group+"="+string(m.Body))
	}
	if strings.Join(heads, " ") != `a="a1" b="b1"` {
		t.Fatalf("received %v, want the heads of groups a and b", heads)
	}
}

// An account at its stored bytes limit (pgqueue.Options.StoredBytesLimit)
// may not emit: the batch fails with invalid_output naming the account's
// bytes and limit, and sends nothing.
func TestEmitRefusedAtStoredBytesLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.deploy("relay", "relay", relayCaps("out-*"))
	e.createQueue("in", pgqueue.Settings{MaxReceiveCount: 1})
	e.createQueue("out-a", pgqueue.Settings{})
	e.send("out-a", fmt.Sprintf(`"%s"`, strings.Repeat("x", 1500))) // under 2 kB: stored uncompressed
	if err := pgqueue.NewSweeper(e.queue, pgqueue.SweeperOptions{}).RecordStats(ctx); err != nil {
		t.Fatal(err)
	}
	limited, err := pgqueue.New(e.pool, pgqueue.Options{Schema: e.schema,
		StoredBytesLimit: func(context.Context, pgqueue.DB, string) (int64, error) { return 1000, nil }})
	if err != nil {
		t.Fatal(err)
	}
	e.send("in", `{"emit":[{"queue":"out-a","body":1}]}`)
	e.putTrigger(triggers.Trigger{Queue: "in", Function: "relay", BatchSize: 1})
	e.startEngine(func(c *triggers.Config) { c.Queue = limited })
	e.waitFor("the invocation", 30*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.invocations`) == 1
	})
	want := `invalid_output: emit refused: send batch to queue "out-a": account ` + acct + ` stores`
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE failure_kind = 'invalid_output'
		AND outcome = 'failure' AND emitted = 0 AND starts_with(error, $1) AND strpos(error, 'its limit is 1000') > 0`, want); got != 1 {
		t.Errorf("no failed invocation whose error starts %q and names the limit", want)
	}
	if got := e.messages("out-a"); got != 1 {
		t.Errorf("out-a holds %d messages, want the 1 sent before", got)
	}
}
