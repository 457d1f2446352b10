package kv_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/kv"
	"github.com/sluicehq/sluice/pgqueue"
)

// BenchmarkSet: Set of a 100-byte value at one of 10,000 keys of one
// account, one writer, commits not waiting for the disk (so that the
// statement's own cost shows, not the fsync's), without a quota and with
// one (kv_usage is kept either way; the quota adds its check to the
// statement). BENCHMARKS.md, "Key-value quota".
func BenchmarkSet(b *testing.B) {
	for _, quota := range []kv.Quota{{}, {Entries: 1_000_000, Bytes: 1 << 30}} {
		b.Run(fmt.Sprintf("quota=%v", quota != (kv.Quota{})), func(b *testing.B) {
			durable, schema := pgtest.Schema(b, pgqueue.Migrations, kv.Migrations)
			s := benchStores(b, pgtest.AsyncCommitPool(b, durable), schema, quota)
			value := make([]byte, 100)
			rng := rand.New(rand.NewPCG(1, 1))
			b.ResetTimer()
			for range b.N {
				if err := s.Set(context.Background(), pgqueue.DefaultAccount, "bench", fmt.Appendf(nil, "k%d", rng.IntN(10_000)), value, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSetParallel: Set of a 100-byte value at one of 10,000 keys of
// one account from 8 writers at once, durable commits, without a quota
// and with one the account is far from: what the quota's shared lock
// costs an account writing from many connections (kv migration 003; near
// its quota, the writes take the lock in turn). BENCHMARKS.md, "Key-value
// quota".
func BenchmarkSetParallel(b *testing.B) {
	for _, quota := range []kv.Quota{{}, {Entries: 1_000_000, Bytes: 1 << 30}} {
		b.Run(fmt.Sprintf("quota=%v", quota != (kv.Quota{})), func(b *testing.B) {
			pool, schema := pgtest.Schema(b, pgqueue.Migrations, kv.Migrations)
			s := benchStores(b, pool, schema, quota)
			value := make([]byte, 100)
			var seed atomic.Uint64
			b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(seed.Add(1), 1))
				for pb.Next() {
					if err := s.Set(context.Background(), pgqueue.DefaultAccount, "bench", fmt.Appendf(nil, "k%d", rng.IntN(10_000)), value, 0); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// benchStores returns the stores of schema on pool, under quota unless it
// is zero.
func benchStores(b *testing.B, pool *pgxpool.Pool, schema string, quota kv.Quota) *kv.Stores {
	b.Helper()
	s, err := kv.New(pool, schema)
	if err != nil {
		b.Fatal(err)
	}
	if quota != (kv.Quota{}) {
		s = s.WithQuota(func(context.Context, string) (kv.Quota, error) { return quota, nil })
	}
	return s
}
