package reliability_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/reliability"
)

// logsOf builds Logs from executions: (id, attempt, invocation, start, end)
// and settles by invocation.
func logsOf(execs []reliability.Execution, settles map[string]reliability.Settle) *reliability.Logs {
	for i := range execs {
		execs[i].Trigger = "queue:q"
		if execs[i].Log == "" {
			execs[i].Log = "a.0.log"
		}
	}
	if settles == nil {
		settles = map[string]reliability.Settle{}
	}
	return &reliability.Logs{Execs: execs, Settles: settles}
}

func acked(n int) reliability.Settle {
	return reliability.Settle{Outcome: "success", Batch: n, Acked: n}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	kill := time.UnixMilli(150)
	cases := []struct {
		name  string
		sent  []int64
		logs  *reliability.Logs
		opts  reliability.CheckOptions
		wants []string // substrings of the problems, in order; none = clean
	}{
		{name: "clean run", sent: []int64{1, 2},
			logs: logsOf([]reliability.Execution{
				{ID: 1, Attempt: 1, Invocation: "i1", StartMS: 100, EndMS: 110},
				{ID: 2, Attempt: 1, Invocation: "i1", StartMS: 100, EndMS: 110},
			}, map[string]reliability.Settle{"i1": acked(2)})},
		{name: "never run", sent: []int64{1},
			logs: logsOf(nil, nil), wants: []string{"message 1: acknowledged send never run: lost"}},
		{name: "only run cut short", sent: []int64{1},
			logs:  logsOf([]reliability.Execution{{ID: 1, Attempt: 1, Invocation: "i1", StartMS: 100}}, nil),
			wants: []string{"gone with no run getting to its end (1 runs): lost"}},
		{name: "redelivered after a crash is fine", sent: []int64{1},
			logs: logsOf([]reliability.Execution{
				{ID: 1, Attempt: 1, Invocation: "i1", StartMS: 100},
				{ID: 1, Attempt: 2, Invocation: "i2", StartMS: 5200, EndMS: 5300, Log: "b.1.log"},
			}, map[string]reliability.Settle{"i2": acked(1)}),
			opts: reliability.CheckOptions{Kills: map[string]time.Time{"a.0.log": kill}}},
		{name: "run again after a committed ack", sent: []int64{1},
			logs: logsOf([]reliability.Execution{
				{ID: 1, Attempt: 1, Invocation: "i1", StartMS: 100, EndMS: 110},
				{ID: 1, Attempt: 2, Invocation: "i2", StartMS: 5200, EndMS: 5300},
			}, map[string]reliability.Settle{"i1": acked(1), "i2": acked(1)}),
			wants: []string{"after attempt 1's batch i1 had every ack committed"}},
		{name: "ack lost in a database crash is counted, not failed", sent: []int64{1},
			logs: logsOf([]reliability.Execution{
				{ID: 1, Attempt: 1, Invocation: "i1", StartMS: 100, EndMS: 110},
				{ID: 1, Attempt: 2, Invocation: "i2", StartMS: 5200, EndMS: 5300},
			}, map[string]reliability.Settle{"i1": acked(1), "i2": acked(1)}),
			opts: reliability.CheckOptions{AcksMayBeLost: true}},
		{name: "same delivery twice", sent: []int64{1},
			logs: logsOf([]reliability.Execution{
				{ID: 1, Attempt: 1, Invocation: "i1", StartMS: 100, EndMS: 110},
				{ID: 1, Attempt: 1, Invocation: "i2", StartMS: 120, EndMS: 130, Log: "b.1.log"},
			}, nil),
			wants: []string{"delivery 1 run twice"}},
		{name: "same delivery again after a run whose claim did not commit", sent: []int64{1},
			logs: func() *reliability.Logs {
				l := logsOf([]reliability.Execution{
					{ID: 1, Attempt: 1, Invocation: "i1", StartMS: 100, EndMS: 110},
					{ID: 1, Attempt: 1, Invocation: "i2", StartMS: 3900, EndMS: 3930},
				}, map[string]reliability.Settle{"i2": acked(1)})
				l.Dropped = map[string]bool{"i1": true}
				return l
			}()},
		{name: "redelivery while the first still ran", sent: []int64{1},
			logs: logsOf([]reliability.Execution{
				{ID: 1, Attempt: 1, Invocation: "i1", StartMS: 100, EndMS: 9000},
				{ID: 1, Attempt: 2, Invocation: "i2", StartMS: 5000, EndMS: 5100},
			}, map[string]reliability.Settle{"i2": acked(1)}),
			wants: []string{"attempt 2 started at 5000 while attempt 1 ran until 9000"}},
		{name: "overlap allowed with extension off", sent: []int64{1},
			logs: logsOf([]reliability.Execution{
				{ID: 1, Attempt: 1, Invocation: "i1", StartMS: 100, EndMS: 9000},
				{ID: 1, Attempt: 2, Invocation: "i2", StartMS: 5000, EndMS: 5100},
			}, nil),
			opts: reliability.CheckOptions{AllowOverlap: true}},
		{name: "redelivery while the killed process lived", sent: []int64{1},
			logs: logsOf([]reliability.Execution{
				{ID: 1, Attempt: 1, Invocation: "i1", StartMS: 100},
				{ID: 1, Attempt: 2, Invocation: "i2", StartMS: 120, EndMS: 130, Log: "b.1.log"},
			}, nil),
			opts:  reliability.CheckOptions{Kills: map[string]time.Time{"a.0.log": kill}},
			wants: []string{"while attempt 1's process lived until 150"}},
		{name: "poison needs no completed run", sent: []int64{1},
			logs: logsOf([]reliability.Execution{{ID: 1, Attempt: 1, Invocation: "i1", StartMS: 100, EndMS: 110}},
				map[string]reliability.Settle{"i1": {Outcome: "partial_failure", Batch: 1, Retried: 1}}),
			opts: reliability.CheckOptions{Poison: map[int64]bool{1: true}}},
		{name: "run but never sent", sent: nil,
			logs:  logsOf([]reliability.Execution{{ID: 7, Attempt: 1, Invocation: "i1", StartMS: 100, EndMS: 110}}, nil),
			wants: []string{"message 7: run but never acknowledged as sent"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			v := reliability.Check(c.sent, c.logs, "q", c.opts)
			if len(v.Problems) != len(c.wants) {
				t.Fatalf("problems %q, want %d matching %q", v.Problems, len(c.wants), c.wants)
			}
			for i, w := range c.wants {
				if !strings.Contains(v.Problems[i], w) {
					t.Errorf("problem %d = %q, want it to say %q", i, v.Problems[i], w)
				}
			}
			if (v.Err() == nil) != (len(c.wants) == 0) {
				t.Errorf("Err() = %v with %d problems", v.Err(), len(v.Problems))
			}
		})
	}
}
