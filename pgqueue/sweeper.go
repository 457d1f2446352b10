package pgqueue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// SweeperOptions configure a Sweeper.
type SweeperOptions struct {
	// Interval between sweeps; 0 means one second.
	Interval time.Duration
	// OnError, when set, is told about failed sweeps; the sweeper keeps
	// going.
	OnError func(error)
	// OnSweep, when set, is told how many messages each sweep moved or
	// removed, for every sweep that committed, also one in progress when
	// Stop came (unless Stop had to cut it short: it then did not
	// commit).
	OnSweep func(n int64)
	// VacuumThreshold is the number of dead rows in the messages table
	// above which the sweeper runs VACUUM on it itself (checked every 10
	// sweeps); 0 means 20,000, negative disables. Autovacuum normally gets
	// there first (the table has aggressive per-table settings); this
	// keeps the queue's index heads clean where autovacuum is off or
	// behind, which is what keeps receive cost flat.
	VacuumThreshold int64
	// AnalyzeThreshold keeps the planner's statistics of the messages
	// table close enough for the settling statements' plans: the sweeper
	// runs ANALYZE on the table when it was never analyzed and holds at
	// least this many rows (checked every sweep), or when more rows were
	// written since its last ANALYZE than this and than the table held
	// then (checked every 10 sweeps); 0 means 10,000, negative disables.
	// Without it a table filled faster than autovacuum analyzes it (or
	// with autovacuum off) is planned as if its queues were small, and an
	// ack of many messages hashes its whole queue instead of looking each
	// message up (BENCHMARKS.md, "Statistics of a filled table").
	AnalyzeThreshold int64
}

// Sweeper calls the sweep SQL function every interval: messages whose last
// allowed lease expired move to the DLQ, and expired messages, messages past
// retention and old dedup keys are removed. Several processes may run one:
// the SQL function lets one session sweep a schema at a time. When a sweep
// hits its per-call row limits it runs again at once.
//
// The Sweeper also keeps the per-minute statistics (Client.MinuteStats):
// while it runs, its Client counts the sends and acks it makes, and once a
// minute (and on Stop) the Sweeper adds them to the queue_minutes table;
// the first Sweeper of any process to get there in a minute samples every
// queue's depth, and statistics older than 24 hours are removed.
type Sweeper struct {
	client *Client
	opts   SweeperOptions

	mu      sync.Mutex
	running bool
	cancel  context.CancelFunc // stops the loop; a sweep in progress goes on
	abort   context.CancelFunc // cuts a sweep in progress short
	done    chan struct{}
}

// stopGrace is how long Stop lets a sweep in progress finish, so that its
// result reaches OnSweep, before cutting it short.
const stopGrace = 5 * time.Second

// NewSweeper returns a Sweeper over client's pool and schema; call Start.
func NewSweeper(client *Client, opts SweeperOptions) *Sweeper {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.VacuumThreshold == 0 {
		opts.VacuumThreshold = 20000
	}
	if opts.AnalyzeThreshold == 0 {
		opts.AnalyzeThreshold = 10000
	}
	return &Sweeper{client: client, opts: opts}
}

// Start starts sweeping in the background.
func (s *Sweeper) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return fmt.Errorf("pgqueue: start sweeper on schema %s: already running", s.client.schema)
	}
	// A sweep runs under work, which Stop cancels only once the sweep
	// had stopGrace to finish: a sweep whose commit reached the database
	// also reaches OnSweep. The loop runs under stop.
	work, abort := context.WithCancel(context.WithoutCancel(ctx))
	stop, cancel := context.WithCancel(work)
	s.running, s.cancel, s.abort, s.done = true, cancel, abort, make(chan struct{})
	s.client.counts.on.Store(true)
	go s.run(stop, work, s.done)
	return nil
}

// Stop stops sweeping, waiting for a sweep in progress to end (it is cut
// short after five seconds, or when ctx is done), and stores the sends and
// acks counted since the last minute. Stop is idempotent.
func (s *Sweeper) Stop(ctx context.Context) error {
	s.mu.Lock()
	if !s.running {
		s.mu.Unlock()
		return nil
	}
	s.running = false
	s.cancel()
	abort, done := s.abort, s.done
	s.mu.Unlock()
	grace := time.AfterFunc(stopGrace, abort)
	defer grace.Stop()
	defer abort()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("pgqueue: stop sweeper on schema %s: %w", s.client.schema, ctx.Err())
	}
	s.client.counts.on.Store(false)
	return s.client.flushCounts(ctx)
}

// report tells OnError about err, unless the sweeper is stopping.
func (s *Sweeper) report(ctx context.Context, err error) {
	if err != nil && ctx.Err() == nil && s.opts.OnError != nil {
		s.opts.OnError(err)
	}
}

// sweepBatch is the per-step row limit of the sweep SQL function; a sweep
// returning at least this many rows probably left work behind.
const sweepBatch = 10000

// run sweeps until stop is done. Vacuum and statistics run under stop (a
// Stop cuts them short); sweeps run under work (see Start).
func (s *Sweeper) run(stop, work context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(s.opts.Interval)
	defer t.Stop()
	var statsMinute int64
	// Whether the schema is on Citus, looked up every 10 sweeps for the
	// table maintenance below (not on every sweep's analyze check);
	// maintenance waits while the lookup fails.
	var citus, citusKnown bool
	maintain := s.opts.VacuumThreshold > 0 || s.opts.AnalyzeThreshold > 0
	for i := 0; ; i++ {
		periodic := i%10 == 0
		if periodic && maintain {
			on, err := s.onCitus(stop)
			s.report(stop, err)
			citus, citusKnown = on, err == nil
		}
		if citusKnown && periodic && s.opts.VacuumThreshold > 0 {
			s.report(stop, s.vacuum(stop, citus))
		}
		if citusKnown && s.opts.AnalyzeThreshold > 0 {
			s.report(stop, s.analyze(stop, citus, periodic))
		}
		if m := time.Now().Unix() / 60; m != statsMinute {
			statsMinute = m
			s.report(stop, s.client.recordStats(stop, false))
		}
		if stop.Err() != nil {
			return
		}
		n, err := s.client.Sweep(work)
		if err == nil && s.opts.OnSweep != nil {
			s.opts.OnSweep(n)
		}
		s.report(work, err)
		if stop.Err() != nil {
			return
		}
		if n >= sweepBatch {
			continue
		}
		select {
		case <-stop.Done():
			return
		case <-t.C:
		}
	}
}

// vacuum runs VACUUM on the messages table when it has more dead rows than
// the threshold. SKIP_LOCKED makes a process skip it while another one
// vacuums. On Citus the VACUUM of the distributed table, run on the
// coordinator, is run by Citus on every shard.
func (s *Sweeper) vacuum(ctx context.Context, citus bool) error {
	var dead int64
	table, found, err := s.readMessagesTable(ctx, citus, "dead_tuples", &dead)
	if err != nil || !found || dead < s.opts.VacuumThreshold {
		return err
	}
	if _, err := s.client.pool.Exec(ctx, "VACUUM (SKIP_LOCKED) "+table); err != nil {
		return fmt.Errorf("pgqueue: sweeper on schema %s: vacuum %d dead rows: %w", s.client.schema, dead, err)
	}
	return nil
}

// analyze runs ANALYZE on the messages table when its statistics are too
// far off (SweeperOptions.AnalyzeThreshold); periodic says whether the
// check of rows written since the last ANALYZE is due. On Citus the
// ANALYZE of the distributed table is run on every shard.
func (s *Sweeper) analyze(ctx context.Context, citus, periodic bool) error {
	var (
		analyzed                   bool
		analyzedRows, rows, writes int64
	)
	table, found, err := s.readMessagesTable(ctx, citus, "statistics_age", &analyzed, &analyzedRows, &rows, &writes)
	if err != nil || !found {
		return err
	}
	threshold := s.opts.AnalyzeThreshold
	due := !analyzed && rows >= threshold ||
		analyzed && periodic && writes >= max(threshold, analyzedRows)
	if !due {
		return nil
	}
	if _, err := s.client.pool.Exec(ctx, "ANALYZE (SKIP_LOCKED) "+table); err != nil {
		return fmt.Errorf("pgqueue: sweeper on schema %s: analyze (%d rows, %d written since the last analyze): %w",
			s.client.schema, rows, writes, err)
	}
	return nil
}

// onCitus reports whether the citus extension is installed.
func (s *Sweeper) onCitus(ctx context.Context) (bool, error) {
	var citus bool
	if err := s.client.pool.QueryRow(ctx, s.client.q.get("citus_installed")).Scan(&citus); err != nil {
		return false, fmt.Errorf("pgqueue: sweeper on schema %s: look for the citus extension: %w", s.client.schema, err)
	}
	return citus, nil
}

// readMessagesTable scans into dest the row of the named query
// (queries.sql) about the messages table, whose quoted name it returns;
// found is false when the statistics views have no row for it. On Citus
// the rows live in the table's shards on the workers: the query's _citus
// form sums what the nodes holding them say.
func (s *Sweeper) readMessagesTable(ctx context.Context, citus bool, query string, dest ...any) (table string, found bool, err error) {
	c := s.client
	table = pgx.Identifier{c.schema, "messages"}.Sanitize()
	if citus {
		query += "_citus"
	}
	err = c.pool.QueryRow(ctx, c.q.get(query), table).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return table, false, nil
	}
	if err != nil {
		return table, false, fmt.Errorf("pgqueue: sweeper on schema %s: read %s of the messages table: %w", c.schema, query, err)
	}
	return table, true, nil
}
