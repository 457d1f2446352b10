package triggers

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/runtime"
)

// planSettlement is table-tested without a database: what becomes of each
// message, by ack policy and outcome.
func TestPlanSettlement(t *testing.T) {
	t.Parallel()
	const maxReceive = 3
	// Messages 1..n, message i on its delivery attempts[i-1], receipt {i}.
	batch := func(attempts ...int) queueBatch {
		msgs := make([]pgqueue.Message, len(attempts))
		for i, n := range attempts {
			msgs[i] = pgqueue.Message{Sequence: int64(i + 1), ReceiveCount: n, Receipt: pgqueue.Receipt{byte(i + 1)}}
		}
		return newQueueBatch(msgs)
	}
	ran := func(outs ...runtime.MessageResult) runtime.Result { return runtime.Result{Messages: outs} }
	acked := runtime.MessageResult{Outcome: runtime.Acked}
	retry := func(after time.Duration, err string) runtime.MessageResult {
		return runtime.MessageResult{Outcome: runtime.Retry, RetryAfter: after, Error: err}
	}
	permanent := runtime.MessageResult{Outcome: runtime.Permanent, Error: "bad input"}
	failed := func(kind runtime.FailureKind, n int) runtime.Result {
		f := &runtime.BatchFailure{Kind: kind, Message: string(kind) + ": boom"}
		res := runtime.Result{Failure: f, Messages: make([]runtime.MessageResult, n)}
		for i := range res.Messages {
			res.Messages[i] = retry(0, f.Message)
		}
		return res
	}
	ack := func(seq int64) pgqueue.Ack { return pgqueue.Ack{Sequence: seq, Receipt: pgqueue.Receipt{byte(seq)}} }
	nack := func(seq int64, delay time.Duration, err string) pgqueue.Nack {
		return pgqueue.Nack{Sequence: seq, Receipt: pgqueue.Receipt{byte(seq)}, Delay: delay, Error: err}
	}
	fail := func(seq int64, reason, err string) pgqueue.Failure {
		return pgqueue.Failure{Sequence: seq, Receipt: pgqueue.Receipt{byte(seq)}, Reason: reason, Error: err}
	}

	tests := []struct {
		name   string
		policy AckPolicy
		batch  queueBatch
		res    runtime.Result
		err    error
		want   settlePlan
	}{
		{
			name: "all acked", policy: AckPolicyAck, batch: batch(1, 2),
			res:  ran(acked, acked),
			want: settlePlan{acks: []pgqueue.Ack{ack(1), ack(2)}},
		},
		{
			name: "retry after the function's delay, else the backoff", policy: AckPolicyAck, batch: batch(1, 2, 1),
			res: ran(retry(time.Minute, "smtp 451"), retry(0, "later"), acked),
			want: settlePlan{
				acks:    []pgqueue.Ack{ack(3)},
				retries: []pgqueue.Nack{nack(1, time.Minute, "smtp 451"), nack(2, 2*time.Second, "later")},
			},
		},
		{
			name: "permanent failure and last delivery go to the DLQ", policy: AckPolicyAck, batch: batch(1, maxReceive, maxReceive+1, maxReceive),
			res: ran(permanent, retry(time.Second, "again"), retry(0, "again"), permanent),
			want: settlePlan{fails: []pgqueue.Failure{
				fail(1, ReasonPermanent, "bad input"),
				fail(2, ReasonMaxReceiveCount, "again"),
				fail(3, ReasonMaxReceiveCount, "again"),
				fail(4, ReasonPermanent, "bad input"),
			}},
		},
		{
			name: "reject_on_error dead-letters any failure at once", policy: AckPolicyRejectOnError, batch: batch(1, 1, 1),
			res: ran(acked, retry(time.Minute, "smtp 451"), permanent),
			want: settlePlan{
				acks:  []pgqueue.Ack{ack(1)},
				fails: []pgqueue.Failure{fail(2, ReasonRejected, "smtp 451"), fail(3, ReasonPermanent, "bad input")},
			},
		},
		{
			name: "whole-batch failure retries every message after the backoff", policy: AckPolicyAck, batch: batch(1, 2),
			res: failed(runtime.FailureTimeout, 2),
			want: settlePlan{retries: []pgqueue.Nack{
				nack(1, time.Second, "timeout: boom"), nack(2, 2*time.Second, "timeout: boom"),
			}},
		},
		{
			name: "ack_first only counts: the batch was deleted before it ran", policy: AckPolicyAckFirst, batch: batch(1, 1, 1),
			res:  ran(acked, retry(time.Minute, "smtp 451"), permanent),
			want: settlePlan{preAcked: 1, preDead: 2},
		},
		{
			name: "ack_first whole-batch failure is dead", policy: AckPolicyAckFirst, batch: batch(1, 1),
			res:  failed(runtime.FailureExit, 2),
			want: settlePlan{preDead: 2},
		},
		{
			name: "not run: the leases are released", policy: AckPolicyAck, batch: batch(1, 2),
			err:  errors.New("invoke f v1 invocation x: runtime: closed"),
			want: settlePlan{notRun: true, release: []pgqueue.Nack{nack(1, 0, ""), nack(2, 0, "")}},
		},
		{
			name: "canceled: the leases are released", policy: AckPolicyRejectOnError, batch: batch(1),
			res:  failed(runtime.FailureCanceled, 1),
			want: settlePlan{notRun: true, release: []pgqueue.Nack{nack(1, 0, "")}},
		},
		{
			name: "ack_first not run: no lease to release", policy: AckPolicyAckFirst, batch: batch(1, 2),
			res:  failed(runtime.FailureCanceled, 2),
			want: settlePlan{notRun: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := &active{Trigger: Trigger{AckPolicy: tt.policy, LeaseExtension: true}, maxReceiveCount: maxReceive}
			rules := a.settleRules()
			rules.backoff = func(attempt int) time.Duration { return time.Duration(attempt) * time.Second }
			got := planSettlement(rules, tt.batch, tt.res, tt.err)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("planSettlement =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// The ack policy decides, in settleRules alone, whether a batch is deleted
// before it runs and whether its leases are extended.
func TestSettleRules(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		policy                                   AckPolicy
		extension                                bool
		deleteFirst, rejectOnError, extendLeases bool
	}{
		{AckPolicyAck, true, false, false, true},
		{AckPolicyAck, false, false, false, false},
		{AckPolicyRejectOnError, true, false, true, true},
		{AckPolicyAckFirst, true, true, false, false},
	} {
		a := &active{Trigger: Trigger{AckPolicy: tt.policy, LeaseExtension: tt.extension}, maxReceiveCount: 5}
		r := a.settleRules()
		if r.deleteFirst != tt.deleteFirst || r.rejectOnError != tt.rejectOnError || r.extendLeases != tt.extendLeases || r.maxReceiveCount != 5 {
			t.Errorf("%s (lease extension %t): rules %+v, want deleteFirst %t, rejectOnError %t, extendLeases %t",
				tt.policy, tt.extension, r, tt.deleteFirst, tt.rejectOnError, tt.extendLeases)
		}
	}
}

func TestCheckEmits(t *testing.T) {
	t.Parallel()
	body := json.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`)
	for _, tc := range []struct {
		name     string
		patterns []string
		emits    []runtime.Emit
		want     string
	}{
		{"allowed", []string{"orders-*", "audit"}, []runtime.Emit{{Queue: "orders-eu", Body: body}, {Topic: "audit", Body: body}}, ""},
		{"none declared", nil, []runtime.Emit{{Queue: "orders-eu", Body: body}}, "invalid_output: emit[0] to queue orders-eu is not allowed: the function's manifest declares no emits"},
		{"no match", []string{"orders-*"}, []runtime.Emit{{Queue: "orders-eu", Body: body}, {Topic: "audit", Body: body}},
			"invalid_output: emit[1] to topic audit is not allowed: it matches none of the function's emits patterns orders-*"},
		{"over 4 MiB", []string{"*"}, []runtime.Emit{{Queue: "a", Body: body}, {Queue: "a", Body: body}, {Queue: "a", Body: body}, {Queue: "b", Body: body}},
			"invalid_output: emit[3] to queue b is over the limit of 4194304 bytes"},
	} {
		err := checkEmits(tc.patterns, tc.emits)
		if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && !strings.HasPrefix(got, tc.want)) {
			t.Errorf("%s: checkEmits = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestSelectEmits(t *testing.T) {
	t.Parallel()
	res := runtime.Result{
		Messages: []runtime.MessageResult{{ID: "1"}, {ID: "2", Outcome: runtime.Retry}, {ID: "3", Outcome: runtime.Permanent}},
		Emits:    []runtime.Emit{{Queue: "a", For: "1"}, {Queue: "b", For: "2"}, {Queue: "c", For: "3"}, {Queue: "d"}},
	}
	got := selectEmits(res, succeeded(res))
	if len(got) != 2 || got[0].Queue != "a" || got[1].Queue != "d" {
		t.Fatalf("selectEmits = %+v, want a and d", got)
	}
	res.Failure = &runtime.BatchFailure{Kind: runtime.FailureTrap}
	if got := selectEmits(res, succeeded(res)); got != nil {
		t.Fatalf("selectEmits after a batch failure = %+v", got)
	}
}

// settleTx notes what it sent one by one as pgqueue.Batch.NoteSent does:
// publishes in order, one entry per queue with its sequences in order.
func TestSentNotes(t *testing.T) {
	var n sentNotes
	n.sent("a", 5)
	n.published("t", 2)
	n.sent("b", 9)
	n.sent("a", 7)
	want := `[{"topic":"t","copies":2},{"queue":"a","sequences":[5,7]},{"queue":"b","sequences":[9]}]`
	if got := n.json(); got != want {
		t.Errorf("notes %s, want %s", got, want)
	}
}
