package reliability

import (
	"fmt"
	"sort"
	"time"
)

// CheckGroups checks the promises of ordered groups from the executions
// of one trigger label (queue:<name>): within each group no two different
// messages ran at overlapping times (at most one in flight), and the
// group's messages first ran in the order they were sent, a message
// running again (a retry or a redelivery) only before the next one
// started. sent lists each group's sequences in send order. A run cut
// short by a kill counts as running until the kill. It returns one line
// per broken promise (nil when none).
func CheckGroups(logs *Logs, trigger string, sent map[string][]int64, kills map[string]time.Time) []string {
	groupOf := map[int64]string{}
	index := map[int64]int{}
	for g, seqs := range sent {
		for i, s := range seqs {
			groupOf[s] = g
			index[s] = i
		}
	}
	type run struct {
		id         int64
		start, end int64
	}
	runs := map[string][]run{}
	for _, x := range logs.Execs {
		if x.Trigger != trigger {
			continue
		}
		g, ok := groupOf[x.ID]
		if !ok {
			continue
		}
		end := x.EndMS
		if end == 0 {
			if at, killed := kills[x.Log]; killed {
				end = at.UnixMilli()
			} else {
				end = 1<<62 - 1 // never ended: overlaps everything after it
			}
		}
		runs[g] = append(runs[g], run{x.ID, x.StartMS, end})
	}
	var problems []string
	groups := make([]string, 0, len(runs))
	for g := range runs {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		rs := runs[g]
		sort.Slice(rs, func(i, j int) bool {
			if rs[i].start != rs[j].start {
				return rs[i].start < rs[j].start
			}
			return index[rs[i].id] < index[rs[j].id]
		})
		// Order: by start time, each run's message is the group's current
		// one or the next; never an earlier one, never one skipped.
		cur := -1
		for _, r := range rs {
			switch i := index[r.id]; {
			case i == cur:
			case i == cur+1:
				cur = i
			default:
				problems = append(problems, fmt.Sprintf("group %s: message %d (#%d) ran after #%d: out of order", g, r.id, i+1, cur+1))
				cur = max(cur, i)
			}
		}
		// At most one in flight: runs of different messages never overlap.
		for i := range rs {
			for j := i + 1; j < len(rs) && rs[j].start < rs[i].end; j++ {
				if rs[j].id != rs[i].id {
					problems = append(problems, fmt.Sprintf("group %s: message %d ran %d–%d while message %d ran %d–%d: two in flight",
						g, rs[j].id, rs[j].start, rs[j].end, rs[i].id, rs[i].start, rs[i].end))
				}
			}
		}
	}
	return problems
}
