package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/cmd/sluice/internal/deploycmd"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/kv"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/triggers"
)

// invokeManifestFunction reads function name of the manifest at path:
// its module (built as `sluice deploy` builds it) and its configuration.
func invokeManifestFunction(ctx context.Context, path, name string) ([]byte, manifest.Function, error) {
	m, err := manifest.ReadFile(path)
	if err != nil {
		return nil, manifest.Function{}, err
	}
	f, ok := m.Functions[name]
	if !ok {
		names := make([]string, 0, len(m.Functions))
		for n := range m.Functions {
			names = append(names, n)
		}
		return nil, manifest.Function{}, usageErrorf("%s has no function %q (it has %q); or give a FUNCTION.wasm file", path, name, names)
	}
	module, err := deploycmd.Modules(m)(ctx, name)
	if err != nil {
		return nil, manifest.Function{}, fmt.Errorf("function %s: %w", name, err)
	}
	return module, f, nil
}

// invokeKV returns the key-value service of a local invocation: the
// account's stores in DATABASE_URL when it is set, else an in-memory
// store that lives for this one invocation. close releases it.
func invokeKV(ctx context.Context, schema, account string) (service runtime.KV, where string, close func(), err error) {
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		return newMemKV(), "memory", func() {}, nil
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, "", nil, fmt.Errorf("connect to DATABASE_URL for the key-value stores: %w", err)
	}
	stores, err := kv.New(pool, schema)
	if err != nil {
		pool.Close()
		return nil, "", nil, err
	}
	return triggers.AccountKV(stores, account), "database (schema " + schema + ", account " + account + ")", pool.Close, nil
}

// invokeEmit is one emitted message as sluice invoke prints it.
type invokeEmit struct {
	Queue   string          `json:"queue,omitempty"`
	Topic   string          `json:"topic,omitempty"`
	For     string          `json:"for,omitempty"`
	Body    json.RawMessage `json:"body"`
	Headers json.RawMessage `json:"headers,omitempty"`
	// Sent says whether a deployed function's batch would send it (its
	// "for" message succeeded, or it has none). sluice invoke itself never
	// sends.
	Sent bool `json:"would_send"`
}

// invokeEmits lists res's emits, marking those the dispatcher would send.
func invokeEmits(res runtime.Result) []invokeEmit {
	sent := map[int]bool{}
	chosen := triggers.SentEmits(res)
	j := 0
	for i := range res.Emits {
		if j < len(chosen) && sameEmit(res.Emits[i], chosen[j]) {
			sent[i] = true
			j++
		}
	}
	out := make([]invokeEmit, len(res.Emits))
	for i, e := range res.Emits {
		out[i] = invokeEmit{Queue: e.Queue, Topic: e.Topic, For: e.For, Body: e.Body, Headers: e.Headers, Sent: sent[i]}
	}
	return out
}

func sameEmit(a, b runtime.Emit) bool {
	return a.Queue == b.Queue && a.Topic == b.Topic && a.For == b.For && string(a.Body) == string(b.Body)
}

// memKV is the in-memory key-value service of a local invocation without
// DATABASE_URL: the same semantics as package kv (values are bytes,
// increments decimal text, expiry by TTL), nothing persisted.
type memKV struct {
	mu sync.Mutex
	m  map[string]memValue
}

type memValue struct {
	v       []byte
	expires time.Time // zero: never
}

func newMemKV() *memKV { return &memKV{m: map[string]memValue{}} }

func (s *memKV) live(store string, key []byte) (memValue, bool) {
	v, ok := s.m[store+"\x00"+string(key)]
	if ok && !v.expires.IsZero() && !time.Now().Before(v.expires) {
		delete(s.m, store+"\x00"+string(key))
		return memValue{}, false
	}
	return v, ok
}

func expiry(ttl time.Duration) time.Time {
	if ttl <= 0 {
		return time.Time{}
	}
	return time.Now().Add(ttl)
}

func (s *memKV) Get(_ context.Context, store string, key []byte) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.live(store, key)
	return append([]byte(nil), v.v...), ok, nil
}

func (s *memKV) Set(_ context.Context, store string, key, value []byte, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[store+"\x00"+string(key)] = memValue{v: append([]byte(nil), value...), expires: expiry(ttl)}
	return nil
}

func (s *memKV) Delete(_ context.Context, store string, key []byte) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.live(store, key)
	delete(s.m, store+"\x00"+string(key))
	return ok, nil
}

func (s *memKV) Increment(_ context.Context, store string, key []byte, delta int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.live(store, key)
	var n int64
	if ok {
		var err error
		if n, err = strconv.ParseInt(string(v.v), 10, 64); err != nil {
			return 0, fmt.Errorf("%w: kv_increment %s: the value is not a decimal integer", runtime.ErrKVInvalid, store)
		}
	}
	n += delta
	s.m[store+"\x00"+string(key)] = memValue{v: []byte(strconv.FormatInt(n, 10)), expires: v.expires}
	return n, nil
}

func (s *memKV) CompareAndSet(_ context.Context, store string, key, old, value []byte, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.live(store, key)
	if old == nil && ok || old != nil && (!ok || string(v.v) != string(old)) {
		return false, nil
	}
	s.m[store+"\x00"+string(key)] = memValue{v: append([]byte(nil), value...), expires: expiry(ttl)}
	return true, nil
}
