package server

import (
	"fmt"
	"net/url"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/wire"
)

// TestListsArePaged: every management list answers at most limit items
// (1 to 1000, 1000 by default) with a next cursor, and following next
// visits each item once.
func TestListsArePaged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("")
	v := "/v1/accounts/" + acct
	e.deployTrap(acct, "f")
	e.deployTrap(acct, "g")
	e.deployTrap(acct, "h")
	for i := range 5 {
		q := fmt.Sprintf("q%d", 4-i) // created out of name order
		e.do(tok, "POST", v+"/queues", `{"name":"`+q+`"}`).expect(201)
		e.do(tok, "PUT", v+"/triggers/t"+q, `{"kind":"queue","queue":"`+q+`","function":"f","enabled":false}`).expect(200)
		e.do(tok, "POST", v+"/hooks", `{"name":"h`+q+`","queue":"`+q+`","verify":"none"}`).expect(201)
		e.do(tok, "POST", v+"/keys", `{"scopes":["mq:send"]}`).expect(201)
	}
	type page struct {
		Queues      []wire.Queue
		Triggers    []wire.TriggerInfo
		Hooks       []wire.HookInfo
		Keys        []wire.Key
		Functions   []wire.Function
		Invocations []wire.Invocation
		Next        string
	}
	names := func(p page) []string {
		var out []string
		for _, x := range p.Queues {
			out = append(out, x.Name)
		}
		for _, x := range p.Triggers {
			out = append(out, x.Name)
		}
		for _, x := range p.Hooks {
			out = append(out, x.Name)
		}
		for _, x := range p.Keys {
			out = append(out, x.ID)
		}
		for _, x := range p.Functions {
			out = append(out, x.Name)
		}
		return out
	}
	for _, tc := range []struct {
		what string
		n    int
	}{{"queues", 5}, {"triggers", 5}, {"hooks", 5}, {"keys", 6}, {"functions", 3}} {
		var all page
		e.do(tok, "GET", v+"/"+tc.what, "").expect(200).decode(&all)
		if len(names(all)) != tc.n || all.Next != "" {
			t.Fatalf("%s: %v next %q", tc.what, names(all), all.Next)
		}
		var paged []string
		pages := 0
		for after := ""; ; pages++ {
			var p page
			e.do(tok, "GET", v+"/"+tc.what+"?limit=2&after="+url.QueryEscape(after), "").expect(200).decode(&p)
			paged = append(paged, names(p)...)
			if len(names(p)) > 2 || pages > 10 {
				t.Fatalf("%s: page %v", tc.what, names(p))
			}
			if p.Next == "" {
				break
			}
			after = p.Next
		}
		if !slices.Equal(paged, names(all)) || pages != (tc.n-1)/2 {
			t.Errorf("%s paged %v in %d pages, want %v", tc.what, paged, pages+1, names(all))
		}
		e.do(tok, "GET", v+"/"+tc.what+"?limit=1001", "").expectError(400, "invalid_argument")
		e.do(tok, "GET", v+"/"+tc.what+"?limit=0", "").expectError(400, "invalid_argument")
	}
	var q page
	e.do(tok, "GET", v+"/queues?limit=2", "").expect(200).decode(&q)
	if names(q)[0] != "q0" || q.Next != "q1" {
		t.Errorf("first page of queues %v next %q: want name order", names(q), q.Next)
	}
}
