package pgqueue_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
)

func (e *env) sendGroup(queue, group string, n int) int64 {
	e.t.Helper()
	seq, err := e.c.Send(e.ctx, acct, queue, pgqueue.NewMessage{Body: body(n), Group: group})
	if err != nil {
		e.t.Fatal(err)
	}
	return seq
}

func groupsOf(msgs []pgqueue.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Group
	}
	return out
}

func TestGroupsDeliverOneAtATimeInOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("orders", pgqueue.Settings{})
	a1 := e.sendGroup("orders", "a", 1)
	a2 := e.sendGroup("orders", "a", 2)
	a3 := e.sendGroup("orders", "a", 3)
	b1 := e.sendGroup("orders", "b", 1)
	b2 := e.sendGroup("orders", "b", 2)
	u1 := e.send("orders", `{"plain":1}`)
	u2 := e.send("orders", `{"plain":2}`)

	got := e.receive("orders", pgqueue.ReceiveOptions{Max: 10})
	if want := []int64{a1, b1, u1, u2}; !slices.Equal(seqs(got), want) {
		t.Fatalf("first receive: got %v, want the group heads and the ungrouped messages %v", seqs(got), want)
	}
	if g := groupsOf(got); !slices.Equal(g, []string{"a", "b", "", ""}) {
		t.Fatalf("groups: got %q", g)
	}
	if more := e.receive("orders", pgqueue.ReceiveOptions{Max: 10}); len(more) != 0 {
		t.Fatalf("a group had a second message in flight: %v", seqs(more))
	}
	if s := e.stats("orders"); s.Groups != 2 || s.GroupsInflight != 2 || s.GroupedWaiting != 3 || s.Delayed != 0 || s.Ready != 0 {
		t.Fatalf("stats with both heads in flight: %+v", s)
	}
	// Acking a's head makes a2 receivable, and only a2.
	if err := e.c.Delete(e.ctx, acct, "orders", a1, got[0].Receipt); err != nil {
		t.Fatal(err)
	}
	got = e.receive("orders", pgqueue.ReceiveOptions{Max: 10})
	if !slices.Equal(seqs(got), []int64{a2}) {
		t.Fatalf("after acking a1: got %v, want [%d]", seqs(got), a2)
	}
	// A nacked head comes back itself; the group waits for it.
	if _, err := e.c.Nack(e.ctx, acct, "orders", []pgqueue.Nack{{Sequence: a2, Receipt: got[0].Receipt, Error: "boom"}}); err != nil {
		t.Fatal(err)
	}
	got = e.receive("orders", pgqueue.ReceiveOptions{Max: 10})
	if !slices.Equal(seqs(got), []int64{a2}) || got[0].ReceiveCount != 2 {
		t.Fatalf("after nacking a2: got %v, want a2 again", seqs(got))
	}
	if s := e.stats("orders"); s.GroupsBlocked != 1 {
		t.Fatalf("a group whose head failed and holds a3 back: GroupsBlocked = %d, want 1", s.GroupsBlocked)
	}
	// A permanent failure dead-letters the head; the group goes on with a3.
	if _, err := e.c.Fail(e.ctx, acct, "orders", []pgqueue.Failure{{Sequence: a2, Receipt: got[0].Receipt}}); err != nil {
		t.Fatal(err)
	}
	got = e.receive("orders", pgqueue.ReceiveOptions{Max: 10})
	if !slices.Equal(seqs(got), []int64{a3}) {
		t.Fatalf("after failing a2: got %v, want [%d]", seqs(got), a3)
	}
	dl, err := e.c.ReceiveDLQ(e.ctx, acct, "orders", 10)
	if err != nil || len(dl) != 1 || dl[0].Sequence != a2 || dl[0].Group != "a" {
		t.Fatalf("dead letters: %v, %v", dl, err)
	}
	if g := e.one(`SELECT group_key FROM dead_letters WHERE sequence = $1`, a2); g != "a" {
		t.Fatalf("dead letter group = %v, want a", g)
	}
	// Ack b1 and a3: b2 next; then a's group is empty.
	if err := e.c.Delete(e.ctx, acct, "orders", a3, pgqueue.Receipt{}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(e.ctx, acct, "orders", b1, pgqueue.Receipt{}); err != nil {
		t.Fatal(err)
	}
	got = e.receive("orders", pgqueue.ReceiveOptions{Max: 10})
	if !slices.Equal(seqs(got), []int64{b2}) {
		t.Fatalf("after acking b1: got %v, want [%d]", seqs(got), b2)
	}
	if s := e.stats("orders"); s.Groups != 1 {
		t.Fatalf("groups after a emptied: %d, want 1", s.Groups)
	}
	// Redrive puts a2 back into group a, which is empty: receivable now.
	if n, err := e.c.Redrive(e.ctx, acct, "orders", 10); err != nil || n != 1 {
		t.Fatalf("redrive: %d, %v", n, err)
	}
	got = e.receive("orders", pgqueue.ReceiveOptions{Max: 10})
	if len(got) != 1 || got[0].Group != "a" || string(got[0].Body) != `{"n": 2}` {
		t.Fatalf("after redrive: got %v (%q), want a2 back in group a", seqs(got), groupsOf(got))
	}
}

func TestGroupRedriveRejoinsAtTheEndOfItsGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	s1 := e.sendGroup("q", "g", 1)
	s2 := e.sendGroup("q", "g", 2)
	s3 := e.sendGroup("q", "g", 3)
	if _, err := e.c.Fail(e.ctx, acct, "q", []pgqueue.Failure{{Sequence: s1}}); err != nil {
		t.Fatal(err)
	}
	got := e.receive("q", pgqueue.ReceiveOptions{Max: 10})
	if !slices.Equal(seqs(got), []int64{s2}) {
		t.Fatalf("got %v, want [%d]", seqs(got), s2)
	}
	if n, err := e.c.Redrive(e.ctx, acct, "q", 10); err != nil || n != 1 {
		t.Fatalf("redrive: %d, %v", n, err)
	}
	if more := e.receive("q", pgqueue.ReceiveOptions{Max: 10}); len(more) != 0 {
		t.Fatalf("a redriven message ran beside the group's head: %v", seqs(more))
	}
	if err := e.c.Delete(e.ctx, acct, "q", s2, got[0].Receipt); err != nil {
		t.Fatal(err)
	}
	var order []string
	var last int64
	for range 2 {
		m := e.receive("q", pgqueue.ReceiveOptions{Max: 10})
		if len(m) != 1 {
			t.Fatalf("want one message, got %v", seqs(m))
		}
		order = append(order, string(m[0].Body))
		last = m[0].Sequence
		if err := e.c.Delete(e.ctx, acct, "q", m[0].Sequence, m[0].Receipt); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(order, []string{`{"n": 3}`, `{"n": 1}`}) {
		t.Fatalf("after the redrive: bodies %v, want message 3 then the redriven message 1", order)
	}
	if last <= s3 {
		t.Fatalf("the redriven message kept sequence %d, want a new one above %d", last, s3)
	}
	// A dedup key on a grouped send returns the sequence the message got.
	seq, err := e.c.Send(e.ctx, acct, "q", pgqueue.NewMessage{Body: body(9), Group: "g", DedupKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.c.Send(e.ctx, acct, "q", pgqueue.NewMessage{Body: body(9), Group: "g", DedupKey: "k"})
	if err != nil || again != seq {
		t.Fatalf("repeat dedup send: %d, %v, want %d", again, err, seq)
	}
	if m := e.receive("q", pgqueue.ReceiveOptions{Max: 10}); len(m) != 1 || m[0].Sequence != seq {
		t.Fatalf("received %v, want [%d]", seqs(m), seq)
	}
}

func TestGroupHeadLeaseExpiryRedeliversHeadAndSweeperDeadLettersIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{MaxReceiveCount: 2})
	s1 := e.sendGroup("q", "g", 1)
	s2 := e.sendGroup("q", "g", 2)
	var last pgqueue.Message
	for i := range 2 {
		got := e.receive("q", pgqueue.ReceiveOptions{Max: 10, VisibilityTimeout: time.Second})
		if !slices.Equal(seqs(got), []int64{s1}) {
			t.Fatalf("delivery %d: got %v, want the head %d", i+1, seqs(got), s1)
		}
		last = got[0]
		waitPast(last.VisibleAt)
	}
	if n := e.sweep(); n < 1 {
		t.Fatalf("sweep moved %d, want the head's final lease", n)
	}
	got := e.receive("q", pgqueue.ReceiveOptions{Max: 10})
	if !slices.Equal(seqs(got), []int64{s2}) {
		t.Fatalf("after the head was dead-lettered: got %v, want [%d]", seqs(got), s2)
	}
	// The dead letter keeps its group, so a redrive puts it back into it
	// (lost by sweep() from migration 010 to 013).
	if g := e.one(`SELECT group_key FROM dead_letters WHERE sequence = $1`, s1); g != "g" {
		t.Fatalf("dead letter group = %v, want g", g)
	}
}

func TestFifoQueueRequiresGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, err := e.c.CreateQueue(e.ctx, acct, "fifo", pgqueue.Settings{Fifo: true})
	if err != nil {
		t.Fatal(err)
	}
	if !q.Settings.Fifo {
		t.Fatal("created queue does not report Fifo")
	}
	_, err = e.c.Send(e.ctx, acct, "fifo", pgqueue.NewMessage{Body: body(1)})
	if !errors.Is(err, pgqueue.ErrInvalidArgument) || !strings.Contains(err.Error(), "group") {
		t.Fatalf("send without group to a fifo queue: %v, want ErrInvalidArgument naming the group", err)
	}
	_, err = e.c.SendBatch(e.ctx, acct, "fifo", []pgqueue.NewMessage{{Body: body(1), Group: "g"}, {Body: body(2)}})
	if !errors.Is(err, pgqueue.ErrInvalidArgument) {
		t.Fatalf("batch with one message lacking a group: %v", err)
	}
	if _, err := e.c.SendBatch(e.ctx, acct, "fifo", []pgqueue.NewMessage{{Body: body(1), Group: "g"}, {Body: body(2), Group: "g"}}); err != nil {
		t.Fatal(err)
	}
	// The SQL API: send and send_batch take group_key; send_entries "group".
	e.exec(`SELECT send('fifo', '{"x":1}', group_key => 'h')`)
	e.exec(`SELECT send_batch('fifo', ARRAY['{"x":2}', '{"x":3}']::jsonb[], 0, 'h')`)
	e.exec(`SELECT send_entries('fifo', '[{"body": {"x":4}, "group": "k"}]')`)
	tx, _ := e.pool.Begin(e.ctx)
	defer tx.Rollback(e.ctx)
	if _, err := tx.Exec(e.ctx, "SET LOCAL search_path = "+pgxIdent(e.schema)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, `SELECT send('fifo', '{"x":1}')`); err == nil || !strings.Contains(err.Error(), "fifo queue") {
		t.Fatalf("SQL send without a group to a fifo queue: %v", err)
	}
	got := e.receive("fifo", pgqueue.ReceiveOptions{Max: 10})
	if g := groupsOf(got); !slices.Equal(g, []string{"g", "h", "k"}) {
		t.Fatalf("heads: %q, want one each of g, h, k", g)
	}
	if n := e.one(`SELECT count(*) FROM peek('fifo', 10)`); n != int64(0) {
		t.Fatalf("peek shows %v parked messages", n)
	}
	// Turning fifo off lets ungrouped messages in; the groups stay ordered.
	if _, err := e.c.PatchQueue(e.ctx, acct, "fifo", pgqueue.QueueOptions{"fifo": false}); err != nil {
		t.Fatal(err)
	}
	e.send("fifo", `{"plain":true}`)
	if got := e.receive("fifo", pgqueue.ReceiveOptions{Max: 10}); len(got) != 1 || got[0].Group != "" {
		t.Fatalf("after fifo off: %v", seqs(got))
	}
	_, err = e.c.PatchQueue(e.ctx, acct, "fifo", pgqueue.QueueOptions{"fifo": 1})
	if !errors.Is(err, pgqueue.ErrInvalidArgument) {
		t.Fatalf("fifo = 1: %v", err)
	}
	_, err = e.c.Send(e.ctx, acct, "fifo", pgqueue.NewMessage{Body: body(1), Group: strings.Repeat("x", 129)})
	if !errors.Is(err, pgqueue.ErrInvalidArgument) {
		t.Fatalf("129-character group: %v", err)
	}
}

func TestGroupParkedMessageIgnoresVisibilityChangesAndPurgeClearsGroups(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	e.sendGroup("q", "g", 1)
	s2 := e.sendGroup("q", "g", 2)
	if err := e.c.ChangeVisibility(e.ctx, acct, "q", s2, pgqueue.Receipt{}, 0); err == nil || !errors.Is(err, pgqueue.ErrMessageNotFound) {
		// A parked message is not receivable, so it has no visibility to change.
		if err != nil {
			t.Fatalf("change visibility of a parked message: %v", err)
		}
	}
	if got := e.receive("q", pgqueue.ReceiveOptions{Max: 10}); len(got) != 1 {
		t.Fatalf("a visibility change un-parked a message: got %v", seqs(got))
	}
	if n, err := e.c.Purge(e.ctx, acct, "q"); err != nil || n != 2 {
		t.Fatalf("purge: %d, %v", n, err)
	}
	if n := e.one(`SELECT count(*) FROM message_groups`); n != int64(0) {
		t.Fatalf("message_groups after purge: %v rows", n)
	}
	e.sendGroup("q", "g", 3)
	if got := e.receive("q", pgqueue.ReceiveOptions{Max: 10}); len(got) != 1 {
		t.Fatalf("after purge the group starts anew: got %v", seqs(got))
	}
}

func TestGroupDelayedSendKeepsItsDelayWhenItBecomesHead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	s1 := e.sendGroup("q", "g", 1)
	s2, err := e.c.Send(e.ctx, acct, "q", pgqueue.NewMessage{Body: body(2), Group: "g", Delay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(e.ctx, acct, "q", s1, pgqueue.Receipt{}); err != nil {
		t.Fatal(err)
	}
	if got := e.receive("q", pgqueue.ReceiveOptions{Max: 10}); len(got) != 0 {
		t.Fatalf("the delayed message ran before its delay: %v", seqs(got))
	}
	if s := e.stats("q"); s.Delayed != 1 {
		t.Fatalf("stats: %+v, want the head delayed", s)
	}
	_ = s2
}

// event is one step of the recorded history of a concurrent run.
type event struct {
	group string
	seq   int64
	start bool // received (true) or about to be settled (false)
}

// TestGroupsUnderConcurrency runs 8 consumers over 20 groups with random
// failures and checks from the recorded history that no two messages of
// one group were in flight at once and that each group's messages
// completed in send order.
func TestGroupsUnderConcurrency(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{MaxReceiveCount: 1000})
	const groups, perGroup, consumers = 20, 15, 8
	sent := map[string][]int64{}
	var batch []pgqueue.NewMessage
	for i := range perGroup {
		for g := range groups {
			batch = append(batch, pgqueue.NewMessage{Body: body(i), Group: fmt.Sprintf("g%02d", g)})
		}
	}
	seqsSent, err := e.c.SendBatch(e.ctx, acct, "q", batch)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range batch {
		sent[m.Group] = append(sent[m.Group], seqsSent[i])
	}
	total := groups * perGroup

	var mu sync.Mutex
	var history []event
	done := map[int64]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, consumers)
	for c := range consumers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for {
				mu.Lock()
				finished := len(done) == total
				mu.Unlock()
				if finished {
					return
				}
				msgs, err := e.c.Receive(e.ctx, acct, "q", pgqueue.ReceiveOptions{Max: 1 + rng.IntN(5), VisibilityTimeout: time.Minute})
				if err != nil {
					errs <- err
					return
				}
				if len(msgs) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				mu.Lock()
				for _, m := range msgs {
					history = append(history, event{m.Group, m.Sequence, true})
				}
				mu.Unlock()
				for _, m := range msgs {
					fail := rng.IntN(4) == 0
					mu.Lock()
					history = append(history, event{m.Group, m.Sequence, false})
					if !fail {
						done[m.Sequence] = true
					}
					mu.Unlock()
					if fail {
						_, err = e.c.Nack(e.ctx, acct, "q", []pgqueue.Nack{{Sequence: m.Sequence, Receipt: m.Receipt, Error: "random"}})
					} else {
						err = e.c.Delete(e.ctx, acct, "q", m.Sequence, m.Receipt)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkGroupHistory(t, history, sent)
}

// checkGroupHistory fails unless, per group, starts and ends alternate
// (never two in flight) and the messages start in sent order, a message
// starting again only while it is the group's current one.
func checkGroupHistory(t *testing.T, history []event, sent map[string][]int64) {
	t.Helper()
	inflight := map[string]int64{}
	next := map[string]int{} // index in sent of the group's current message
	for i, ev := range history {
		if ev.start {
			if cur, ok := inflight[ev.group]; ok {
				t.Fatalf("history[%d]: group %s: %d received while %d was in flight", i, ev.group, ev.seq, cur)
			}
			inflight[ev.group] = ev.seq
			want := sent[ev.group]
			k := next[ev.group]
			switch {
			case k < len(want) && want[k] == ev.seq:
			case k+1 < len(want) && want[k+1] == ev.seq:
				next[ev.group] = k + 1
			default:
				t.Fatalf("history[%d]: group %s delivered %d out of order (current %d of %v)", i, ev.group, ev.seq, k, want)
			}
			continue
		}
		if inflight[ev.group] != ev.seq {
			t.Fatalf("history[%d]: group %s settled %d, which was not in flight", i, ev.group, ev.seq)
		}
		delete(inflight, ev.group)
	}
	for g, want := range sent {
		if next[g] != len(want)-1 {
			t.Fatalf("group %s reached message %d of %d", g, next[g]+1, len(want))
		}
	}
}

func TestGroupsReceiveShareOutAcrossConsumers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	var batch []pgqueue.NewMessage
	for g := range 10 {
		for i := range 3 {
			batch = append(batch, pgqueue.NewMessage{Body: body(i), Group: fmt.Sprint(g)})
		}
	}
	if _, err := e.c.SendBatch(e.ctx, acct, "q", batch); err != nil {
		t.Fatal(err)
	}
	// Two receives in concurrent transactions get disjoint heads.
	tx1, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback(e.ctx)
	rows, err := tx1.Query(e.ctx, `SELECT sequence FROM `+pgxIdent(e.schema)+`.account_receive($1, 'q', 5)`, acct)
	if err != nil {
		t.Fatal(err)
	}
	var first []int64
	for rows.Next() {
		var s int64
		_ = rows.Scan(&s)
		first = append(first, s)
	}
	if rows.Err() != nil || len(first) != 5 {
		t.Fatalf("first receive: %v, %v", first, rows.Err())
	}
	second := e.receive("q", pgqueue.ReceiveOptions{Max: 10})
	if len(second) != 5 {
		t.Fatalf("second consumer got %d heads while the first held 5, want the other 5", len(second))
	}
	for _, s := range seqs(second) {
		if slices.Contains(first, s) {
			t.Fatalf("both consumers got %d", s)
		}
	}
	_ = json.RawMessage(nil)
}

// TestGroupHandOverWakesLongPoll: acking a group's head wakes a receiver
// long-polling for the next message of the group (the poll fallback is set
// far beyond the wait, so only the wake-up can deliver it).
func TestGroupHandOverWakesLongPoll(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	l := startListener(t, e)
	c, err := pgqueue.New(e.pool, pgqueue.Options{Schema: e.schema, Listener: l, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{}, 1)
	pgqueue.SetWaitingHook(c, func() { waiting <- struct{}{} })
	s1 := e.sendGroup("q", "g", 1)
	s2 := e.sendGroup("q", "g", 2)
	head := e.receive("q", pgqueue.ReceiveOptions{Max: 10})
	if !slices.Equal(seqs(head), []int64{s1}) {
		t.Fatalf("got %v, want [%d]", seqs(head), s1)
	}
	got := make(chan []pgqueue.Message, 1)
	errc := make(chan error, 1)
	go func() {
		msgs, err := c.Receive(e.ctx, acct, "q", pgqueue.ReceiveOptions{Wait: pgqueue.MaxWait})
		errc <- err
		got <- msgs
	}()
	<-waiting
	// Subscribe as well, to see the wake-up itself: the long poll would
	// also find the message at the end of its wait. Through the listener,
	// which hears it wherever the hand-over ran (on Citus, the trigger
	// runs on the shard's worker).
	sub, err := l.Subscribe(e.ctx, acct, "q")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := e.c.Delete(e.ctx, acct, "q", s1, head[0].Receipt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sub.C():
	case <-time.After(pgqueue.MaxWait):
		t.Fatal("no wake-up for the group's next message")
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if msgs := <-got; !slices.Equal(seqs(msgs), []int64{s2}) {
		t.Fatalf("long poll returned %v, want the next message of the group [%d]", seqs(msgs), s2)
	}
}

// TestGroupsThroughput drains the same 300 messages with 8 consumers
// spread over no groups, 1 group and 100 groups, checks each run's
// recorded history (per group: in order, one at a time) and logs the rates
// (no assertion on speed: the machine may be loaded).
func TestGroupsThroughput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const total, consumers = 300, 8
	for _, groups := range []int{0, 1, 100} {
		q := fmt.Sprintf("t%d", groups)
		e.queue(q, pgqueue.Settings{})
		batch := make([]pgqueue.NewMessage, total)
		for i := range batch {
			batch[i] = pgqueue.NewMessage{Body: body(i)}
			if groups > 0 {
				batch[i].Group = fmt.Sprint(i % groups)
			}
		}
		seqsSent, err := e.c.SendBatch(e.ctx, acct, q, batch)
		if err != nil {
			t.Fatal(err)
		}
		sent := map[string][]int64{}
		for i, m := range batch {
			if m.Group != "" {
				sent[m.Group] = append(sent[m.Group], seqsSent[i])
			}
		}
		var mu sync.Mutex
		var history []event
		done := 0
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, consumers)
		for range consumers {
			wg.Go(func() {
				for {
					mu.Lock()
					finished := done == total
					mu.Unlock()
					if finished {
						return
					}
					msgs, err := e.c.Receive(e.ctx, acct, q, pgqueue.ReceiveOptions{Max: 10, VisibilityTimeout: time.Minute})
					if err != nil {
						errs <- err
						return
					}
					if len(msgs) == 0 {
						time.Sleep(time.Millisecond)
						continue
					}
					acks := make([]pgqueue.Ack, len(msgs))
					mu.Lock()
					for i, m := range msgs {
						history = append(history, event{m.Group, m.Sequence, true})
						acks[i] = pgqueue.Ack{Sequence: m.Sequence, Receipt: m.Receipt}
					}
					for _, m := range msgs {
						history = append(history, event{m.Group, m.Sequence, false})
					}
					done += len(msgs)
					mu.Unlock()
					if _, err := e.c.Ack(e.ctx, acct, q, acks); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		elapsed := time.Since(start)
		if groups > 0 {
			checkGroupHistory(t, history, sent)
		}
		if n := e.stats(q).Total; n != 0 {
			t.Fatalf("%d groups: %d messages left after the drain", groups, n)
		}
		t.Logf("%3d groups: %d messages in %v (%.0f msgs/s), 8 consumers, receive up to 10",
			groups, total, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds())
	}
}

// TestFifoQueueRefusesTopicCopies: publishes carry no group, so a fifo
// queue can neither subscribe to a topic nor receive a publish's copy (it
// became fifo after subscribing); the refused publish sends nothing to any
// subscriber.
func TestFifoQueueRefusesTopicCopies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.c.CreateQueue(e.ctx, acct, "ordered", pgqueue.Settings{Fifo: true}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"plain", "later"} {
		if _, err := e.c.CreateQueue(e.ctx, acct, q, pgqueue.Settings{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.c.CreateTopic(e.ctx, acct, "events"); err != nil {
		t.Fatal(err)
	}
	err := e.c.Subscribe(e.ctx, acct, "events", "ordered")
	if !errors.Is(err, pgqueue.ErrInvalidArgument) || !strings.Contains(err.Error(), `queue "ordered"`) || !strings.Contains(err.Error(), "fifo") {
		t.Fatalf("subscribing a fifo queue: %v, want ErrInvalidArgument naming the queue and fifo", err)
	}
	for _, q := range []string{"plain", "later"} {
		if err := e.c.Subscribe(e.ctx, acct, "events", q); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := e.c.Publish(e.ctx, acct, "events", body(1), nil); err != nil || n != 2 {
		t.Fatalf("publish to two plain queues: %d copies, %v", n, err)
	}
	e.exec(`SELECT update_queue('later', '{"fifo": true}')`)
	_, err = e.c.Publish(e.ctx, acct, "events", body(2), nil)
	if !errors.Is(err, pgqueue.ErrInvalidArgument) || !strings.Contains(err.Error(), `queue "later"`) {
		t.Fatalf("publish reaching a queue made fifo: %v, want ErrInvalidArgument naming it", err)
	}
	if n := e.one(`SELECT count(*) FROM messages`); n != int64(2) {
		t.Fatalf("messages after the refused publish: %v, want the first publish's 2 copies only", n)
	}
}

// TestGroupsKeepTheirGroupInADeadLetterQueue: a grouped message forwarded
// to its queue's dead_letter_queue (by Fail and by the sweeper) keeps its
// group there, so a fifo dead-letter queue takes it and delivers the group
// one at a time, in the order its messages failed.
func TestGroupsKeepTheirGroupInADeadLetterQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.c.CreateQueue(e.ctx, acct, "parked", pgqueue.Settings{Fifo: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.CreateQueue(e.ctx, acct, "orders", pgqueue.Settings{Fifo: true, MaxReceiveCount: 1, DeadLetterQueue: "parked"}); err != nil {
		t.Fatal(err)
	}
	seqs, err := e.c.SendBatch(e.ctx, acct, "orders", []pgqueue.NewMessage{
		{Body: body(1), Group: "a"}, {Body: body(2), Group: "a"}, {Body: body(3), Group: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	// a1 fails permanently; a2 then b1 run out of receives and are swept.
	if done, err := e.c.Fail(e.ctx, acct, "orders", []pgqueue.Failure{{Sequence: seqs[0], Error: "boom"}}); err != nil || len(done) != 1 {
		t.Fatalf("fail a1: %v %v", done, err)
	}
	got := e.receive("orders", pgqueue.ReceiveOptions{Max: 10, VisibilityTimeout: time.Second})
	if g := groupsOf(got); !slices.Equal(g, []string{"a", "b"}) {
		t.Fatalf("heads after a1 failed: %q, want a (a2) and b", g)
	}
	for deadline := time.Now().Add(30 * time.Second); e.stats("orders").Total > 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the sweeper did not forward the expired last leases: %+v", e.stats("orders"))
		}
		e.sweep()
	}
	// In the fifo dead-letter queue: a's two messages one at a time, in
	// order, beside b's.
	first := e.receive("parked", pgqueue.ReceiveOptions{Max: 10})
	if g := groupsOf(first); !slices.Equal(g, []string{"a", "b"}) {
		t.Fatalf("dead-letter queue heads: %q, want one of a and one of b", g)
	}
	for _, m := range first {
		if m.Group == "a" && string(m.Body) != `{"n": 1}` {
			t.Fatalf("group a's head in the dead-letter queue is %s, want a1 (it failed first)", m.Body)
		}
	}
	if more := e.receive("parked", pgqueue.ReceiveOptions{Max: 10}); len(more) != 0 {
		t.Fatalf("received %d more while a's and b's heads are in flight, want 0", len(more))
	}
	acks := pgqueue.Leases(first)
	if done, err := e.c.Ack(e.ctx, acct, "parked", acks); err != nil || len(done) != 2 {
		t.Fatalf("ack the heads: %v %v", done, err)
	}
	next := e.receive("parked", pgqueue.ReceiveOptions{Max: 10})
	if len(next) != 1 || next[0].Group != "a" || string(next[0].Body) != `{"n": 2}` {
		t.Fatalf("after acking the heads: %+v, want a2", next)
	}
}
