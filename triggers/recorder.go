package triggers

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
)

// invocationRecord is one row of the invocations table.
type invocationRecord struct {
	account, function    string
	version              int
	triggerID            int64
	triggerType, source  string
	batchSize            int
	startedAt            time.Time
	duration             time.Duration
	outcome, failureKind string
	err                  string
	acked, retried, dead int
	messageIDs           []int64
	stderr               []byte
}

// maxRecordedStderr caps the stderr kept per invocation row.
const maxRecordedStderr = 8 << 10

// recorder writes invocation records in the background, many rows per
// COPY, so recording costs the dispatcher no round trip per batch.
type recorder struct {
	pool  *pgxpool.Pool
	table pgx.Identifier
	log   zerolog.Logger
	in    chan invocationRecord
	done  chan struct{}
}

func newRecorder(pool *pgxpool.Pool, schema string, log zerolog.Logger) *recorder {
	return &recorder{pool: pool, table: pgx.Identifier{schema, "invocations"}, log: log,
		in: make(chan invocationRecord, 4096), done: make(chan struct{})}
}

func (e *Engine) record(r invocationRecord) {
	select {
	case e.recorder.in <- r:
	default:
		e.log.Warn().Str("function", r.function).Msg("invocation log is backed up; record dropped")
	}
}

func (r *recorder) start() { go r.run() }

// stop flushes what is buffered and ends the recorder.
func (r *recorder) stop() {
	close(r.in)
	<-r.done
}

func (r *recorder) run() {
	defer close(r.done)
	var buf []invocationRecord
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case rec, ok := <-r.in:
			if !ok {
				r.flush(buf)
				return
			}
			buf = append(buf, rec)
			if len(buf) < 512 {
				continue
			}
		case <-t.C:
		}
		r.flush(buf)
		buf = buf[:0]
	}
}

var invocationColumns = []string{"account", "function", "version", "trigger_id", "trigger_type", "source",
	"batch_size", "started_at", "duration_ms", "outcome", "failure_kind", "error", "acked", "retried",
	"dead", "message_ids", "stderr"}

func (r *recorder) flush(buf []invocationRecord) {
	if len(buf) == 0 {
		return
	}
	rows := make([][]any, len(buf))
	for i, rec := range buf {
		var stderr, failureKind, errText any
		if len(rec.stderr) > 0 {
			// text columns take neither NUL bytes nor invalid UTF-8
			text := strings.ToValidUTF8(string(rec.stderr[:min(len(rec.stderr), maxRecordedStderr)]), "\uFFFD")
			stderr = strings.ReplaceAll(text, "\x00", "")
		}
		if rec.failureKind != "" {
			failureKind = rec.failureKind
		}
		if rec.err != "" {
			errText = rec.err
		}
		ids := rec.messageIDs
		if ids == nil {
			ids = []int64{}
		}
		rows[i] = []any{rec.account, rec.function, rec.version, rec.triggerID, rec.triggerType, rec.source,
			rec.batchSize, rec.startedAt, float64(rec.duration.Microseconds()) / 1000, rec.outcome,
			failureKind, errText, rec.acked, rec.retried, rec.dead, ids, stderr}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := r.pool.CopyFrom(ctx, r.table, invocationColumns, pgx.CopyFromRows(rows)); err != nil {
		r.log.Error().Err(err).Int("records", len(buf)).Msg("writing the invocation log failed")
	}
}
