package server

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/sluicehq/sluice/triggers"
	"github.com/sluicehq/sluice/wire"
)

// Function logs and invocation outcomes, streamed (GET .../logs).
//
// The stream reads the invocation log in the database, never the
// process's memory, so it shows the invocations of every server on the
// database whichever server the client reached. It polls with a cursor
// (the record's log position, log_seq): records of several processes may
// commit out of log_seq order, so the last logsSettle of records is read
// again at each poll and each record sent once (by id).
const (
	// logsPoll is how often a following stream polls the log.
	logsPoll = 500 * time.Millisecond
	// logsSettle is how long after an invocation ends its record is
	// surely committed, along with every record of a smaller log_seq.
	logsSettle = 10 * time.Second
	// logsPage records are read per query, at most logsPages queries a
	// poll; a backlog beyond that is read by later polls.
	logsPage, logsPages = 500, 4
	// logsVisibility is how often a stream reads again which triggers'
	// invocations a queue-limited key may see.
	logsVisibility = 10 * time.Second
	// logsHeartbeat is how often an idle stream sends a comment, so
	// proxies and clients see it is alive.
	logsHeartbeat = 15 * time.Second
)

// streamLogs answers GET .../logs as Server-Sent Events: one event
// "invocation" (data: a wire.Invocation with its captured stderr, id: its
// log position) per invocation record the filters select, oldest first.
// Query: function, trigger, outcome, since (RFC 3339), after (a log
// position: resume after the last event id seen; the Last-Event-ID header
// does the same) and follow. Without follow the stream ends with an event
// "end" once the records there are now have been sent; with follow it
// goes on until the client leaves or the server stops. Without since or
// after a stream starts at the end of the log (only new invocations).
func (a *api) streamLogs(w http.ResponseWriter, r *http.Request, c *call) error {
	query := r.URL.Query()
	f := triggers.InvocationFilter{Function: query.Get("function"), Outcome: query.Get("outcome"), Trigger: query.Get("trigger"), Limit: logsPage}
	if f.Outcome != "" && !slices.Contains(triggers.Outcomes, f.Outcome) {
		return badRequest("invalid outcome %q: use success, partial_failure or failure", truncate(f.Outcome, 40))
	}
	var err error
	if f.Since, err = queryTime(r, "since"); err != nil {
		return err
	}
	follow := false
	switch v := query.Get("follow"); v {
	case "", "false", "0":
	case "true", "1":
		follow = true
	default:
		return badRequest("invalid follow %q: use true or false", truncate(v, 20))
	}
	after := int64(-1)
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		if after, err = integer("Last-Event-ID", v, 0, math.MaxInt64); err != nil {
			return err
		}
	}
	if _, ok := query["after"]; ok {
		if after, err = queryInt(r, "after", 0, math.MaxInt64, 0); err != nil {
			return err
		}
	}
	byTrigger, err := a.invocationQueues(r.Context(), c)
	if err != nil {
		return err
	}
	visibleAt := time.Now()
	if after < 0 {
		if f.Since != nil {
			after, err = a.s.invocations.SeqSince(r.Context(), c.account, *f.Since)
		} else {
			after, err = a.s.invocations.LastSeq(r.Context())
		}
		if err != nil {
			return err
		}
	}

	slot, err := a.slots.hold(r.Context(), c.account, slotLogStream, maxAccountLogStreams, 5, "log streams open", "close one, then retry")
	if err != nil {
		return err
	}
	defer slot.give()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return nil // the client is gone or the writer cannot stream
	}
	ctx, cancel := a.untilShutdown(r.Context())
	defer cancel()
	s := logStream{floor: after, seen: map[int64]int64{}}
	lastWrite := time.Now()
	for {
		extendWrite(w) // each turn's events get their own time to reach the client
		if time.Since(visibleAt) >= logsVisibility {
			// Triggers come and go: what a queue-limited key may see is
			// read again now and then.
			if byTrigger, err = a.invocationQueues(ctx, c); err != nil {
				return nil // the client sees the stream end and resumes
			}
			visibleAt = time.Now()
		}
		n, caughtUp, err := s.poll(ctx, a, c, f, byTrigger, w)
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn().Err(err).Str("account", c.account).Msg("log stream ended by an error")
				fmt.Fprintf(w, "event: error\ndata: %s\n\n", mustJSON(map[string]string{"message": "reading the invocation log failed; reconnect with after set to the last event id"}))
				_ = rc.Flush()
			}
			return nil
		}
		if n > 0 {
			lastWrite = time.Now()
			if err := rc.Flush(); err != nil {
				return nil
			}
		}
		if !follow && caughtUp {
			fmt.Fprintf(w, "event: end\ndata: {\"after\":%d}\n\n", s.floor)
			_ = rc.Flush()
			return nil
		}
		if !caughtUp {
			continue
		}
		if time.Since(lastWrite) >= logsHeartbeat {
			fmt.Fprint(w, ": keep-alive\n\n")
			if err := rc.Flush(); err != nil {
				return nil
			}
			lastWrite = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(logsPoll):
		}
	}
}

// logStream is a stream's cursor: every record at or below floor has been
// sent (or skipped by the filters); seen holds the ids sent above it, with
// their Seq.
//
// mark is the log's last Seq (of every account) when it was read, at
// markAt: once logsSettle has passed since, every record at or below it
// is committed, so a poll started then that reads up to the end of the
// log has seen each one its filters match, and floor rises to mark. So
// the floor keeps up with the log even when the filters match nothing
// (else each poll would read again every record since the stream began).
type logStream struct {
	floor  int64
	seen   map[int64]int64
	mark   int64
	markAt time.Time
}

// poll sends the records written since the last poll and reports how many
// it sent and whether it read up to the end of the log.
func (s *logStream) poll(ctx context.Context, a *api, c *call, f triggers.InvocationFilter, byTrigger map[int64][]string, w http.ResponseWriter) (sent int, caughtUp bool, err error) {
	started := time.Now()
	after, prefixSettled := s.floor, true
	for range logsPages {
		page, err := a.s.invocations.Follow(ctx, c.account, after, logsSettle, f)
		if err != nil {
			return sent, false, err
		}
		for _, v := range page {
			after = v.Seq
			if _, dup := s.seen[v.ID]; !dup {
				s.seen[v.ID] = v.Seq
				wv := toInvocationJSON(v)
				if c.allowsInvocation(wv, byTrigger) {
					fmt.Fprintf(w, "id: %d\nevent: invocation\ndata: %s\n\n", v.Seq, mustJSON(wv))
					sent++
				}
			}
			if prefixSettled = prefixSettled && v.Settled; prefixSettled {
				s.floor = v.Seq
				delete(s.seen, v.ID)
			}
		}
		if len(page) < f.Limit {
			return sent, true, s.advance(ctx, a, started)
		}
	}
	return sent, false, nil
}

// advance raises floor to mark when a poll that started logsSettle after
// markAt has read up to the end of the log, and reads the next mark.
func (s *logStream) advance(ctx context.Context, a *api, pollStarted time.Time) error {
	if !s.markAt.IsZero() && pollStarted.Sub(s.markAt) < logsSettle {
		return nil
	}
	if !s.markAt.IsZero() && s.mark > s.floor {
		s.floor = s.mark
		for id, seq := range s.seen {
			if seq <= s.floor {
				delete(s.seen, id)
			}
		}
	}
	mark, err := a.s.invocations.LastSeq(ctx)
	if err != nil {
		return err
	}
	// Taken once the read is done: every record at or below mark was
	// written (its Seq drawn) before now.
	s.mark, s.markAt = mark, time.Now()
	return nil
}

// toInvocationJSON is an invocation as the API shows it.
func toInvocationJSON(v triggers.Invocation) wire.Invocation {
	out := wire.Invocation{ID: v.ID, Function: v.Function, Version: v.Version, TriggerID: v.TriggerID,
		Trigger: v.Trigger, TriggerType: v.TriggerType, Source: v.Source, BatchSize: v.BatchSize,
		StartedAt: v.StartedAt.UTC(), DurationMS: v.DurationMS, Outcome: v.Outcome, FailureKind: v.FailureKind,
		Error: v.Error, Acked: v.Acked, Retried: v.Retried, Dead: v.Dead, Emitted: v.Emitted, MessageIDs: v.MessageIDs, Stderr: v.Stderr,
		HTTPRequests: v.HTTP.Requests, HTTPErrors: v.HTTP.Errors, HTTPBytesSent: v.HTTP.BytesSent,
		HTTPBytesReceived: v.HTTP.BytesReceived}
	for _, m := range v.EmittedMessages {
		e := wire.EmittedMessage{Queue: m.Queue, Topic: m.Topic, For: m.For}
		if m.Topic != "" {
			e.Copies = &m.Copies
		} else {
			e.Sequence = &m.Sequence
		}
		out.Emits = append(out.Emits, e)
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("server: encode %T: %v", v, err)) // wire types always encode
	}
	return b
}
