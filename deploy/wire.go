package deploy

import "github.com/sluicehq/sluice/wire"

// WireState is st as the HTTP API sends it (GET .../deploy/state).
func WireState(st State) wire.DeployState {
	out := wire.DeployState{Topics: st.Topics}
	for _, k := range []struct {
		kind string
		m    map[string]Resource
	}{{KindQueue, st.Queues}, {KindFunction, st.Functions}, {KindTrigger, st.Triggers}, {KindHook, st.Hooks}} {
		for _, name := range sortedKeys(k.m) {
			out.Resources = append(out.Resources, wire.AppResource{Kind: k.kind, Name: name, App: k.m[name].App, Fields: k.m[name].Fields})
		}
	}
	if out.Topics == nil {
		out.Topics = []TopicInfo{}
	}
	return out
}

// stateFromWire is the inverse of WireState.
func stateFromWire(w wire.DeployState) State {
	st := State{Queues: map[string]Resource{}, Functions: map[string]Resource{}, Triggers: map[string]Resource{},
		Hooks: map[string]Resource{}, Topics: w.Topics}
	for _, r := range w.Resources {
		m := map[string]map[string]Resource{KindQueue: st.Queues, KindFunction: st.Functions, KindTrigger: st.Triggers, KindHook: st.Hooks}[r.Kind]
		if m != nil {
			m[r.Name] = Resource{App: r.App, Fields: r.Fields}
		}
	}
	return st
}

// WirePlan is p as the HTTP API sends it.
func WirePlan(p Plan, applied bool) wire.DeployPlan {
	out := wire.DeployPlan{App: p.App, Steps: make([]wire.PlanStep, len(p.Steps)), Applied: applied}
	for i, s := range p.Steps {
		out.Steps[i] = wire.PlanStep{Kind: s.Kind, Name: s.Name, Action: s.Action, Messages: s.Messages}
		for _, c := range s.Changes {
			out.Steps[i].Changes = append(out.Steps[i].Changes, wire.PlanFieldChange(c))
		}
	}
	return out
}

// PlanFromWire is the inverse of WirePlan, for printing a plan the API
// returned.
func PlanFromWire(w wire.DeployPlan) Plan {
	p := Plan{App: w.App, Steps: make([]Step, len(w.Steps))}
	for i, s := range w.Steps {
		p.Steps[i] = Step{Kind: s.Kind, Name: s.Name, Action: s.Action, Messages: s.Messages}
		for _, c := range s.Changes {
			p.Steps[i].Changes = append(p.Steps[i].Changes, FieldChange(c))
		}
	}
	return p
}
