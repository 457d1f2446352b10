package triggers

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Invocation ids are taken from the log's identity in blocks, so that a
// batch does not pay a round trip for its id. A block is used for at most
// idBlockLife, so ids of several processes interleave by at most that much
// time; its size follows the rate: doubled (up to maxIDBlock) when a block
// ran out within its life, else what the last block used.
const (
	idBlockLife = time.Second
	maxIDBlock  = 256
)

// invocationIDs hands out the ids of one engine's invocations, increasing.
type invocationIDs struct {
	mu    sync.Mutex
	ids   []int64   // taken, not yet handed out
	taken time.Time // when ids was taken
	size  int       // the next block's size
}

// invocationID takes the id of an invocation about to run from the
// invocation log's identity: the one id every surface shows (log lines,
// the invocation record, the API, the CLI). Ids of one engine increase.
func (e *Engine) invocationID(ctx context.Context) (int64, error) {
	a := &e.ids
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.ids) == 0 || time.Since(a.taken) > idBlockLife {
		switch {
		case a.size == 0:
			a.size = 1
		case len(a.ids) == 0:
			a.size = min(2*a.size, maxIDBlock)
		default:
			a.size = max(1, a.size-len(a.ids))
		}
		rows, err := e.cfg.Pool.Query(ctx, e.q.Get("next_invocation_ids"), a.size)
		if err != nil {
			a.ids = nil
			return 0, fmt.Errorf("triggers: take invocation ids: %w", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			a.ids = nil
			return 0, fmt.Errorf("triggers: take invocation ids: %w", err)
		}
		slices.Sort(ids)
		a.ids, a.taken = ids, time.Now()
	}
	id := a.ids[0]
	a.ids = a.ids[1:]
	return id, nil
}
