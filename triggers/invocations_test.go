package triggers_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/triggers"
)

// insertInvocation writes an invocation row as the engine records it and
// returns its id.
func (e *env) insertInvocation(account string, triggerID *int64, outcome string, startedAt time.Time, durationMS float64) int64 {
	e.t.Helper()
	var id int64
	name := "invoke"
	if triggerID != nil {
		if err := e.pool.QueryRow(e.t.Context(), fmt.Sprintf(`SELECT name FROM %s.triggers WHERE id = $1`,
			pgx.Identifier{e.schema}.Sanitize()), *triggerID).Scan(&name); err != nil {
			e.t.Fatal(err)
		}
	}
	// The trigger's name read first: on Citus the log takes no subquery in
	// an INSERT's VALUES.
	err := e.pool.QueryRow(e.t.Context(), fmt.Sprintf(`INSERT INTO %[1]s.invocations (account, function, version, trigger_id,
		trigger_type, source, batch_size, started_at, duration_ms, outcome, error, message_ids, stderr, trigger)
		VALUES ($1, 'worker', 2, $2, 'queue', 'jobs', 1, $3, $4, $5, nullif($5, 'success'), '{7}', 'log line', $6)
		RETURNING id`, pgx.Identifier{e.schema}.Sanitize()), account, triggerID, startedAt, durationMS, outcome, name).Scan(&id)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

func TestInvocationLogList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	log := e.triggers.Invocations()
	if _, err := e.triggers.Put(ctx, triggers.Trigger{Account: acct, Name: "work", Kind: triggers.KindQueue, Queue: "jobs", Function: "worker"}); err != nil {
		t.Fatal(err)
	}
	ts, err := e.triggers.List(ctx, acct)
	if err != nil || len(ts) != 1 {
		t.Fatalf("triggers %+v %v", ts, err)
	}
	tid := ts[0].ID
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	var ids []int64
	for i, outcome := range []string{"success", "failure", "success", "partial_failure"} {
		trig := &tid
		if i == 3 {
			trig = nil
		}
		ids = append(ids, e.insertInvocation(acct, trig, outcome, t0.Add(time.Duration(i)*time.Minute), 12.5))
	}
	e.insertInvocation("000000000077", &tid, "success", t0, 1)

	all, err := log.List(ctx, acct, triggers.InvocationFilter{})
	if err != nil || len(all) != 4 {
		t.Fatalf("List: %+v %v", all, err)
	}
	for i, v := range all {
		if v.ID != ids[3-i] {
			t.Fatalf("List order: %+v, want ids %v newest first", all, ids)
		}
	}
	first := all[3]
	if first.Account != acct || first.Function != "worker" || first.Version != 2 || first.TriggerID == nil || *first.TriggerID != tid ||
		first.Trigger != "work" || first.TriggerType != "queue" || first.Source != "jobs" || first.BatchSize != 1 ||
		!first.StartedAt.Equal(t0) || first.DurationMS != 12.5 || first.Outcome != "success" || first.Error != "" ||
		len(first.MessageIDs) != 1 || first.MessageIDs[0] != 7 || first.Stderr != "log line" {
		t.Fatalf("first invocation %+v", first)
	}
	if all[0].TriggerID != nil || all[0].Trigger != "invoke" || all[2].Error != "failure" {
		t.Fatalf("invocations %+v", all)
	}

	since, until := t0.Add(time.Minute), t0.Add(3*time.Minute)
	for _, c := range []struct {
		name string
		f    triggers.InvocationFilter
		want []int64
	}{
		{"outcome", triggers.InvocationFilter{Outcome: "success"}, []int64{ids[2], ids[0]}},
		{"function", triggers.InvocationFilter{Function: "other"}, nil},
		{"trigger", triggers.InvocationFilter{Trigger: "work"}, []int64{ids[2], ids[1], ids[0]}},
		{"since until", triggers.InvocationFilter{Since: &since, Until: &until}, []int64{ids[2], ids[1]}},
		{"before id", triggers.InvocationFilter{BeforeID: ids[2], Limit: 1}, []int64{ids[1]}},
		{"id", triggers.InvocationFilter{ID: ids[1]}, []int64{ids[1]}},
		{"limit", triggers.InvocationFilter{Limit: 2}, []int64{ids[3], ids[2]}},
	} {
		got, err := log.List(ctx, acct, c.f)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var gotIDs []int64
		for _, v := range got {
			gotIDs = append(gotIDs, v.ID)
		}
		if fmt.Sprint(gotIDs) != fmt.Sprint(c.want) {
			t.Errorf("%s: ids %v, want %v", c.name, gotIDs, c.want)
		}
	}
}

func TestInvocationLogAfter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	log := e.triggers.Invocations()
	old := e.insertInvocation(acct, nil, "success", time.Now().Add(-time.Hour), 250)
	other := e.insertInvocation("000000000077", nil, "failure", time.Now().Add(-time.Hour), 5)
	recent := e.insertInvocation(acct, nil, "failure", time.Now(), 5)

	got, err := log.After(ctx, 0, 10, 30*time.Second)
	if err != nil || len(got) != 3 {
		t.Fatalf("After: %+v %v", got, err)
	}
	// The log position is the time the record was written (migration 007).
	seq := func(id int64) int64 { return e.scalar(`SELECT log_seq FROM {{schema}}.invocations WHERE id = $1`, id) }
	want := []triggers.InvocationSummary{
		{Seq: seq(old), ID: old, Account: acct, Function: "worker", Outcome: "success", DurationMS: 250, Settled: true},
		{Seq: seq(other), ID: other, Account: "000000000077", Function: "worker", Outcome: "failure", DurationMS: 5, Settled: true},
		{Seq: seq(recent), ID: recent, Account: acct, Function: "worker", Outcome: "failure", DurationMS: 5, Settled: false},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("After[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if got, err := log.After(ctx, seq(old), 1, 30*time.Second); err != nil || len(got) != 1 || got[0].Seq != seq(other) {
		t.Fatalf("After(%d, 1) = %+v %v", seq(old), got, err)
	}
	if got, err := log.After(ctx, seq(recent), 10, 30*time.Second); err != nil || len(got) != 0 {
		t.Fatalf("After(last) = %+v %v", got, err)
	}
}

// TestInvocationLogCompression checks migration 008: the log's large
// values are compressed with lz4 where the server has it, and a record's
// message ids read back whole.
func TestInvocationLogCompression(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	want := "l"
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SET LOCAL default_toast_compression = lz4`); err != nil {
		want = "" // built without lz4: the migration leaves pglz
	}
	tx.Rollback(ctx)
	rows, err := e.pool.Query(ctx, `SELECT attname, attcompression::text FROM pg_attribute
		WHERE attrelid = $1::regclass AND attname IN ('message_ids', 'stderr', 'emitted_messages') ORDER BY attname`,
		e.schema+".invocations")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var name, method string
		err := r.Scan(&name, &method)
		return name + "=" + method, err
	})
	if wantAll := []string{"emitted_messages=" + want, "message_ids=" + want, "stderr=" + want}; fmt.Sprint(got) != fmt.Sprint(wantAll) || err != nil {
		t.Fatalf("compression of the log's columns: %v (%v), want %v", got, err, wantAll)
	}
	var id, n, sum int64
	ids := make([]int64, 1000)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	// The ids as a parameter: Citus takes no subquery in an INSERT.
	if err := e.pool.QueryRow(ctx, fmt.Sprintf(`INSERT INTO %s.invocations (account, function, version, trigger_type,
		source, batch_size, started_at, duration_ms, outcome, message_ids, trigger)
		VALUES ($1, 'worker', 1, 'queue', 'jobs', 1000, now(), 1, 'success', $2, 'work')
		RETURNING id`, pgx.Identifier{e.schema}.Sanitize()), acct, ids).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if err := e.pool.QueryRow(ctx, fmt.Sprintf(`SELECT cardinality(message_ids), (SELECT sum(x) FROM unnest(message_ids) x)
		FROM %s.invocations WHERE id = $1`, pgx.Identifier{e.schema}.Sanitize()), id).Scan(&n, &sum); err != nil || n != 1000 || sum != 500500 {
		t.Fatalf("a record of 1,000 message ids read back %d ids summing to %d (%v)", n, sum, err)
	}
}

// The engine deletes the invocation records that started longer ago than
// InvocationRetention (`sluice serve --invocation-retention`), the first
// time as it starts and then once a minute, and keeps the others.
func TestInvocationRetention(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	expired := e.insertInvocation(acct, nil, "success", time.Now().Add(-2*time.Hour), 5)
	kept := e.insertInvocation(acct, nil, "failure", time.Now().Add(-50*time.Minute), 5)
	e.startEngine(func(c *triggers.Config) { c.InvocationRetention = time.Hour })
	count := func(id int64) int64 {
		return e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE id = $1`, id)
	}
	// The first prune runs at the engine's first reload (200 ms here).
	e.waitFor("the record older than the retention to be deleted", 30*time.Second, func() bool { return count(expired) == 0 })
	if count(kept) != 1 {
		t.Fatalf("record %d, within the retention, was deleted too", kept)
	}
}
