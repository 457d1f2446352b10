package pgqueue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// MaxStatsMinutes is the longest window MinuteStats reads: statistics are
// kept 24 hours.
const MaxStatsMinutes = 1440

// MinuteStats is one minute of a queue's statistics.
type MinuteStats struct {
	// Minute is the start of the minute, in UTC.
	Minute time.Time
	// Sends, Acks and DLQMoves count the messages sent, acknowledged
	// (deleted after receipt) and moved to the DLQ in the minute. Sends
	// and acks are those made through a Client whose process runs a
	// Sweeper; DLQ moves are counted wherever they happen.
	Sends, Acks, DLQMoves int64
	// Ready, Inflight, Delayed and DLQ are the depth sampled in the minute
	// (as Stats counts it), nil when no sample was taken.
	Ready, Inflight, Delayed, DLQ *int64
}

// MinuteStats returns the last minutes (1 to 1440) of a queue's statistics,
// oldest first, one entry per minute; the last is the current, unfinished
// minute (of the database clock).
func (c *Client) MinuteStats(ctx context.Context, account, queue string, minutes int) ([]MinuteStats, error) {
	if minutes < 1 || minutes > MaxStatsMinutes {
		return nil, newError(ErrInvalidArgument, "invalid minutes %d: use 1 to %d", minutes, MaxStatsMinutes)
	}
	op := "read statistics of queue " + quote(queue)
	rows, err := c.pool.Query(ctx, c.q.get("minute_stats"), account, queue, minutes)
	if err != nil {
		return nil, convertError(op, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (MinuteStats, error) {
		var s MinuteStats
		err := row.Scan(&s.Minute, &s.Sends, &s.Acks, &s.DLQMoves, &s.Ready, &s.Inflight, &s.Delayed, &s.DLQ)
		s.Minute = s.Minute.UTC()
		return s, err
	})
	if err != nil {
		return nil, convertError(op, err)
	}
	if len(out) == 0 {
		return nil, c.queueNotFound(ctx, account, queue)
	}
	return out, nil
}

// queueNotFound returns the error for a queue that a query found no row
// of: ErrInvalidName for a bad name, else ErrQueueNotFound.
func (c *Client) queueNotFound(ctx context.Context, account, queue string) error {
	if _, err := c.pool.Exec(ctx, c.q.get("queue_id"), account, queue); err != nil {
		return convertError("find queue "+quote(queue), err)
	}
	// Created since the query.
	return newError(ErrQueueNotFound, "queue %s not found in account %s", quote(queue), account)
}

// minuteCounts holds the sends and acks a Client made, per queue and
// minute, until its Sweeper adds them to the queue_minutes table. Counting
// in memory keeps the send and ack paths free of a shared counter row,
// which every sender would have to lock in turn. It counts only while a
// Sweeper runs, which is what empties it.
type minuteCounts struct {
	on atomic.Bool
	mu sync.Mutex
	m  map[countKey]sendsAcks
	// flushing is held by a flush from taking the counts until they are
	// stored (or put back), so that a flush returns only once every count
	// taken before it is stored: RecordStats called while the sweeper's
	// own flush is under way waits for it.
	flushing sync.Mutex
}

type countKey struct {
	account, queue string
	minute         int64 // Unix minutes
}

type sendsAcks struct{ sends, acks int64 }

// add counts sends and acks on a queue now.
func (mc *minuteCounts) add(account, queue string, sends, acks int) {
	if !mc.on.Load() || sends+acks == 0 {
		return
	}
	k := countKey{account, queue, time.Now().Unix() / 60}
	mc.mu.Lock()
	defer mc.mu.Unlock()
	mc.addLocked(k, sendsAcks{int64(sends), int64(acks)})
}

// addLocked adds v to the counts of k; mc.mu is held.
func (mc *minuteCounts) addLocked(k countKey, v sendsAcks) {
	if mc.m == nil {
		mc.m = make(map[countKey]sendsAcks)
	}
	w := mc.m[k]
	w.sends += v.sends
	w.acks += v.acks
	mc.m[k] = w
}

// take empties the counts and returns them.
func (mc *minuteCounts) take() map[countKey]sendsAcks {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	m := mc.m
	mc.m = nil
	return m
}

// putBack adds counts that could not be stored back in.
func (mc *minuteCounts) putBack(m map[countKey]sendsAcks) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	for k, v := range m {
		mc.addLocked(k, v)
	}
}

// flushCounts adds the counted sends and acks to queue_minutes in one
// statement. Counts of queues deleted since are dropped; on failure they
// are kept for the next flush.
func (c *Client) flushCounts(ctx context.Context) error {
	c.counts.flushing.Lock()
	defer c.counts.flushing.Unlock()
	m := c.counts.take()
	if len(m) == 0 {
		return nil
	}
	accounts, queues := make([]string, 0, len(m)), make([]string, 0, len(m))
	minutes := make([]time.Time, 0, len(m))
	sends, acks := make([]int64, 0, len(m)), make([]int64, 0, len(m))
	for k, v := range m {
		accounts, queues = append(accounts, k.account), append(queues, k.queue)
		minutes = append(minutes, time.Unix(k.minute*60, 0))
		sends, acks = append(sends, v.sends), append(acks, v.acks)
	}
	if _, err := c.pool.Exec(ctx, c.q.get("add_minute_counts"), accounts, queues, minutes, sends, acks); err != nil {
		c.counts.putBack(m)
		return fmt.Errorf("pgqueue: store send and ack counts of %d queue minutes: %w", len(m), err)
	}
	return nil
}

// recordStats adds the counted sends and acks to queue_minutes and
// records every queue's depth in the current minute; unless force, the
// depth only when no process has yet in this minute.
func (c *Client) recordStats(ctx context.Context, force bool) error {
	err := c.flushCounts(ctx)
	if _, serr := c.pool.Exec(ctx, c.q.get("sample_depths"), force); serr != nil {
		err = errors.Join(err, fmt.Errorf("pgqueue: sample queue depths: %w", serr))
	}
	return err
}

// RecordStats stores the per-minute statistics at once instead of at the
// next minute: it adds the sends and acks counted so far and samples every
// queue's depth into the current minute (replacing an earlier sample of
// the minute). The sweeper does this by itself once a minute and on Stop;
// tests and tools call it to see statistics without waiting.
func (s *Sweeper) RecordStats(ctx context.Context) error {
	return s.client.recordStats(ctx, true)
}
