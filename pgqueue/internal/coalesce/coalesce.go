// Package coalesce merges concurrent calls with the same key into one
// execution, the way a database merges concurrent commits into one WAL
// flush: up to MaxInFlight callers per key run at once, alone; callers
// arriving while those run queue up, and when one finishes they all run
// together in the next execution. At low concurrency nothing waits; at high
// concurrency each execution carries many calls.
package coalesce

import (
	"context"
	"sync"
)

// Group coalesces calls by key. The zero value is not usable: set Run.
type Group[Req, Res any] struct {
	// Run executes reqs together and returns one result per request, in
	// order. If it fails for a combined execution, each request is run
	// again alone so that only the requests at fault fail.
	Run func(ctx context.Context, key string, reqs []Req) ([]Res, error)
	// Fits reports whether req may join a pending execution holding reqs
	// (for instance to bound a batch's size); nil means always.
	Fits func(reqs []Req, req Req) bool
	// MaxInFlight is how many executions per key may run at once; 0 means
	// 2. One packs the most calls into each execution (least CPU per call)
	// but leaves the database idle between executions; on the queue
	// benchmarks 2 gave the best throughput, 4 used more CPU for no gain.
	MaxInFlight int

	mu   sync.Mutex
	keys map[string]*keyState[Req, Res]
}

// defaultInFlight is MaxInFlight's default.
const defaultInFlight = 2

type keyState[Req, Res any] struct {
	running int
	pending []*execution[Req, Res]
}

type execution[Req, Res any] struct {
	ctx  context.Context
	reqs []Req
	out  []Res
	errs []error
	done chan struct{}
}

// Do runs req, possibly together with concurrent requests with the same
// key, and returns its result. If ctx ends while the request waits for or
// takes part in a combined execution, Do returns ctx's error; the request
// may still be executed.
func (g *Group[Req, Res]) Do(ctx context.Context, key string, req Req) (Res, error) {
	g.mu.Lock()
	if g.keys == nil {
		g.keys = map[string]*keyState[Req, Res]{}
	}
	s := g.keys[key]
	if s == nil {
		s = &keyState[Req, Res]{}
		g.keys[key] = s
	}
	limit := g.MaxInFlight
	if limit <= 0 {
		limit = defaultInFlight
	}
	if s.running < limit && len(s.pending) == 0 {
		s.running++
		g.mu.Unlock()
		out, err := g.Run(ctx, key, []Req{req})
		g.next(key, s)
		var res Res
		if err == nil {
			res = out[0]
		}
		return res, err
	}
	var e *execution[Req, Res]
	if n := len(s.pending); n > 0 && (g.Fits == nil || g.Fits(s.pending[n-1].reqs, req)) {
		e = s.pending[n-1]
	} else {
		e = &execution[Req, Res]{ctx: context.WithoutCancel(ctx), done: make(chan struct{})}
		s.pending = append(s.pending, e)
	}
	i := len(e.reqs)
	e.reqs = append(e.reqs, req)
	g.mu.Unlock()
	select {
	case <-e.done:
		return e.out[i], e.errs[i]
	case <-ctx.Done():
		var zero Res
		return zero, ctx.Err()
	}
}

// next starts the oldest pending execution of key, or marks key idle.
func (g *Group[Req, Res]) next(key string, s *keyState[Req, Res]) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(s.pending) == 0 {
		s.running--
		if s.running == 0 {
			delete(g.keys, key)
		}
		return
	}
	e := s.pending[0]
	s.pending = s.pending[1:]
	go g.execute(key, s, e)
}

func (g *Group[Req, Res]) execute(key string, s *keyState[Req, Res], e *execution[Req, Res]) {
	g.mu.Lock()
	reqs := e.reqs // no more joiners: e left the pending list
	g.mu.Unlock()
	e.out = make([]Res, len(reqs))
	e.errs = make([]error, len(reqs))
	out, err := g.Run(e.ctx, key, reqs)
	switch {
	case err == nil:
		copy(e.out, out)
	case len(reqs) == 1:
		e.errs[0] = err
	default:
		var wg sync.WaitGroup
		for i := range reqs {
			wg.Go(func() {
				o, err := g.Run(e.ctx, key, reqs[i:i+1])
				if err == nil {
					e.out[i] = o[0]
				}
				e.errs[i] = err
			})
		}
		wg.Wait()
	}
	close(e.done)
	g.next(key, s)
}
