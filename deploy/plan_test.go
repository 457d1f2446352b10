package deploy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/deploy"
	"github.com/sluicehq/sluice/wire"
)

// ComputePlan is a pure function of the account's state and the manifest:
// what it creates, updates, deletes and leaves alone, table-tested.
func TestComputePlan(t *testing.T) {
	t.Parallel()
	q := func(app string, fields map[string]string) deploy.Resource {
		return deploy.Resource{App: app, Fields: fields}
	}
	vis := func(v string) map[string]string { return map[string]string{"visibility_timeout_seconds": v} }
	for _, tc := range []struct {
		name  string
		cur   deploy.State
		want  deploy.Desired
		steps []string // Step.String of every step, in order
		err   string   // a part of the error, when the plan is refused
	}{
		{
			name:  "empty account: everything is created",
			want:  deploy.Desired{Queues: map[string]map[string]string{"orders": vis("30")}, Hooks: map[string]map[string]string{"gh": {"queue": "orders"}}},
			steps: []string{"+ queue orders (create): visibility_timeout_seconds 30", "+ hook gh (create): queue orders"},
		},
		{
			name:  "same settings: unchanged; undeclared settings are not compared",
			cur:   deploy.State{Queues: map[string]deploy.Resource{"orders": q("shop", map[string]string{"visibility_timeout_seconds": "30", "max_receive_count": "9"})}},
			want:  deploy.Desired{Queues: map[string]map[string]string{"orders": vis("30")}},
			steps: []string{"= queue orders (unchanged)"},
		},
		{
			name:  "a changed setting: update with old and new",
			cur:   deploy.State{Queues: map[string]deploy.Resource{"orders": q("shop", vis("30"))}},
			want:  deploy.Desired{Queues: map[string]map[string]string{"orders": vis("60")}},
			steps: []string{"~ queue orders (update): visibility_timeout_seconds 30 → 60"},
		},
		{
			name:  "a resource made by hand that the manifest names is adopted",
			cur:   deploy.State{Functions: map[string]deploy.Resource{"f": q("", map[string]string{"memory_mb": "64"})}},
			want:  deploy.Desired{Functions: map[string]map[string]string{"f": {"memory_mb": "64"}}},
			steps: []string{"~ function f (update): app (none) → shop"},
		},
		{
			name: "what the app no longer declares is deleted, with the messages a queue loses; others are left alone",
			cur: deploy.State{
				Queues:   map[string]deploy.Resource{"old": q("shop", nil), "theirs": q("blog", nil), "manual": q("", nil)},
				Triggers: map[string]deploy.Resource{"queue:old:f": q("shop", nil), "queue:theirs:g": q("blog", nil)},
				Messages: map[string]int64{"old": 12},
			},
			steps: []string{"- queue old (delete): 12 messages lost", "- trigger queue:old:f (delete)"},
		},
		{
			name: "declaring another app's resources is refused, naming the owner",
			cur:  deploy.State{Queues: map[string]deploy.Resource{"posts": q("blog", nil)}, Hooks: map[string]deploy.Resource{"gh": q("blog", nil)}},
			want: deploy.Desired{Queues: map[string]map[string]string{"posts": {}}, Hooks: map[string]map[string]string{"gh": {}}},
			err:  "queue posts (app blog), hook gh (app blog)",
		},
		{
			name: "topics: subscribe declared queues, unsubscribe only this app's manifest subscriptions",
			cur: deploy.State{
				Queues: map[string]deploy.Resource{"a": q("shop", nil), "b": q("shop", nil), "x": q("blog", nil), "h": q("", nil)},
				Topics: []wire.Topic{{Name: "orders", Subscriptions: []wire.Subscription{
					{Queue: "a", Source: "manifest"}, {Queue: "b", Source: "manifest"}, {Queue: "x", Source: "manifest"}, {Queue: "h", Source: "api"},
				}}},
			},
			want: deploy.Desired{
				Queues: map[string]map[string]string{"a": {}, "b": {}, "c": {}},
				Topics: map[string][]string{"orders": {"a", "c"}, "audit": {"b"}},
			},
			steps: []string{"= queue a (unchanged)", "= queue b (unchanged)", "+ queue c (create)",
				"+ topic audit (create): subscribers b", "~ topic orders (update): subscribers a,b → a,c"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := deploy.ComputePlan("shop", tc.cur, tc.want)
			if tc.err != "" {
				var clash *deploy.ClashError
				if !errors.As(err, &clash) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want a clash naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range p.Steps {
				got = append(got, s.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.steps, "\n") {
				t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.steps, "\n"))
			}
		})
	}
}

// A plan that deletes a queue another queue would still name as its
// dead_letter_queue is refused before anything is applied, naming both:
// the queue core would refuse that delete halfway through the apply.
func TestComputePlanKeepsDeadLetterQueuesInUse(t *testing.T) {
	t.Parallel()
	dlq := func(app, name string) deploy.Resource {
		return deploy.Resource{App: app, Fields: map[string]string{"dead_letter_queue": name}}
	}
	cur := deploy.State{Queues: map[string]deploy.Resource{
		"dead": dlq("shop", ""), "dead2": dlq("shop", ""), "chained": dlq("shop", "dead3"), "dead3": dlq("shop", ""),
		"work": dlq("blog", "dead"), "mine": dlq("shop", "dead2"),
	}}
	for _, tc := range []struct {
		name string
		want map[string]map[string]string
		err  string // "" when the plan goes through
	}{
		{"a queue of another app uses it; one of this app keeps its setting",
			map[string]map[string]string{"mine": {}},
			"queue dead2, which leaves the app, is the dead_letter_queue of queue mine; queue dead, which leaves the app, is the dead_letter_queue of queue work"},
		{"this app's user clears its setting; the other app's still uses it",
			map[string]map[string]string{"mine": {"dead_letter_queue": ""}},
			"queue dead, which leaves the app, is the dead_letter_queue of queue work: keep it in the manifest"},
		{"kept in the manifest, or leaving with its user: no refusal",
			map[string]map[string]string{"mine": {}, "dead": {}, "dead2": {}},
			""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := deploy.ComputePlan("shop", cur, deploy.Desired{Queues: tc.want})
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("plan refused: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("err = %v, want one saying %q", err, tc.err)
			}
		})
	}
}
