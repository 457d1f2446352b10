package reliability_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/reliability"
)

func TestCheckGroups(t *testing.T) {
	t.Parallel()
	sent := map[string][]int64{"g": {1, 2, 3}}
	ex := func(id, start, end int64) reliability.Execution {
		return reliability.Execution{Log: "a.log", Trigger: "queue:q", ID: id, StartMS: start, EndMS: end}
	}
	cases := []struct {
		name  string
		execs []reliability.Execution
		kills map[string]time.Time
		want  string // substring of the first problem; "" = clean
	}{
		{"in order, one at a time, with a retry", []reliability.Execution{ex(1, 0, 10), ex(1, 20, 30), ex(2, 30, 40), ex(3, 50, 60)}, nil, ""},
		{"two in flight", []reliability.Execution{ex(1, 0, 10), ex(2, 5, 15), ex(3, 20, 30)}, nil, "two in flight"},
		{"two of a group in one batch", []reliability.Execution{ex(1, 0, 10), ex(2, 0, 10), ex(3, 20, 30)}, nil, "two in flight"},
		{"out of order", []reliability.Execution{ex(2, 0, 10), ex(1, 20, 30), ex(3, 40, 50)}, nil, "out of order"},
		{"earlier message again after the next", []reliability.Execution{ex(1, 0, 10), ex(2, 20, 30), ex(1, 40, 50), ex(3, 60, 70)}, nil, "out of order"},
		{"killed run counts until the kill", []reliability.Execution{ex(1, 0, 0), ex(2, 50, 60)},
			map[string]time.Time{"a.log": time.UnixMilli(100)}, "two in flight"},
	}
	for _, c := range cases {
		got := reliability.CheckGroups(&reliability.Logs{Execs: c.execs}, "queue:q", sent, c.kills)
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s: problems %q, want none", c.name, got)
		case c.want != "" && (len(got) == 0 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s: problems %q, want one with %q", c.name, got, c.want)
		}
	}
}
