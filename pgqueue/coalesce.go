package pgqueue

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/pgqueue/internal/coalesce"
)

// Concurrent sends, receives and acks on the same queue through one Client
// are coalesced (unless Options.NoCoalescing): while two statements for a
// queue are in flight, later calls wait and then go together in the next
// statement, one commit. Each caller still gets exactly its own results
// and errors (a combined statement that fails is retried call by call), so
// coalescing only changes how many commits the database performs.

// maxStatement bounds the messages one coalesced statement carries; it is
// the SQL API's batch limit.
const maxStatement = 1000

type coalescers struct {
	send    coalesce.Group[[]NewMessage, []int64]
	receive coalesce.Group[int, []Message]
	ack     coalesce.Group[[]Ack, []int64]
}

func groupKey(parts ...string) string { return strings.Join(parts, "\x00") }

func splitKey(key string) []string { return strings.Split(key, "\x00") }

func (c *Client) initCoalescers() {
	c.co = &coalescers{}
	c.co.send.Fits = func(reqs [][]NewMessage, req []NewMessage) bool {
		n := len(req)
		for _, r := range reqs {
			n += len(r)
		}
		return n <= maxStatement
	}
	c.co.send.Run = func(ctx context.Context, key string, reqs [][]NewMessage) ([][]int64, error) {
		k := splitKey(key)
		var all []NewMessage
		for _, r := range reqs {
			all = append(all, r...)
		}
		seqs, err := c.sendBatch(ctx, c.pool, k[0], k[1], all)
		if err != nil {
			return nil, err
		}
		if len(seqs) != len(all) {
			return nil, fmt.Errorf("pgqueue: send batch to queue %s: %d sequences for %d messages", quote(k[1]), len(seqs), len(all))
		}
		out := make([][]int64, len(reqs))
		for i, r := range reqs {
			out[i], seqs = seqs[:len(r):len(r)], seqs[len(r):]
		}
		return out, nil
	}
	c.co.receive.Fits = func(reqs []int, req int) bool {
		n := req
		for _, r := range reqs {
			n += r
		}
		return n <= maxStatement
	}
	c.co.receive.Run = func(ctx context.Context, key string, reqs []int) ([][]Message, error) {
		k := splitKey(key)
		total := 0
		for _, r := range reqs {
			total += r
		}
		var vt *int
		if k[2] != "" {
			var v int
			fmt.Sscan(k[2], &v)
			vt = &v
		}
		msgs, err := c.receiveRows(ctx, k[0], k[1], total, vt)
		if err != nil {
			return nil, err
		}
		out := make([][]Message, len(reqs))
		for i, r := range reqs {
			n := min(r, len(msgs))
			out[i], msgs = msgs[:n:n], msgs[n:]
		}
		return out, nil
	}
	c.co.ack.Fits = func(reqs [][]Ack, req []Ack) bool {
		n := len(req)
		for _, r := range reqs {
			n += len(r)
		}
		return n <= maxStatement
	}
	c.co.ack.Run = func(ctx context.Context, key string, reqs [][]Ack) ([][]int64, error) {
		k := splitKey(key)
		var all []Ack
		for _, r := range reqs {
			all = append(all, r...)
		}
		acked, err := c.ack(ctx, k[0], k[1], all)
		if err != nil {
			return nil, err
		}
		if len(reqs) == 1 {
			return [][]int64{acked}, nil
		}
		done := make(map[int64]bool, len(acked))
		for _, s := range acked {
			done[s] = true
		}
		out := make([][]int64, len(reqs))
		for i, r := range reqs {
			for _, a := range r {
				if done[a.Sequence] {
					out[i] = append(out[i], a.Sequence)
				}
			}
		}
		return out, nil
	}
}
