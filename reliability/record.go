package reliability

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Execution is one run of the record function on one message, as its
// "exec" log line (and its batch's "end" line) tell.
type Execution struct {
	// Log is the log file of the process that ran it.
	Log string
	// Trigger is the trigger's name as the log line carries it (a
	// manifest's derived queue:<queue>:<function>, or the name given).
	Trigger    string
	ID         int64 // the message's sequence (a cron tick's Unix time)
	Attempt    int
	Invocation string
	// StartMS and EndMS are the batch's start and end (Unix ms, function
	// clock); EndMS is 0 when the batch never got to its end.
	StartMS, EndMS int64
	// LatencyMS is the message's send-to-function latency.
	LatencyMS float64
}

// Settle is how the dispatcher settled one batch (its outcome line).
type Settle struct {
	Log                         string
	Outcome                     string // success, partial_failure, failure
	Batch, Acked, Retried, Dead int
	Error                       string
}

// Logs is what every serve process of a scenario logged.
type Logs struct {
	Execs []Execution
	// Settles by invocation id.
	Settles map[string]Settle
	// Lines counts the JSON log lines read.
	Lines int
	// Refused counts "acks refused" warnings (stale receipts).
	Refused int
	// Dropped are the invocations whose claim's commit failed after
	// their function had started: their runs' outcomes were dropped and
	// their messages delivered again, their attempt not counted
	// (RELIABILITY.md, "A function may start while its claim commits").
	Dropped map[string]bool
}

// ReadLogs parses every node log in the scenario's folder. A line cut
// short by a SIGKILL is skipped.
func (e *Env) ReadLogs() (*Logs, error) {
	files, err := filepath.Glob(filepath.Join(e.Dir, "*.log"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	out := &Logs{Settles: map[string]Settle{}, Dropped: map[string]bool{}}
	ends := map[string]int64{}
	for _, path := range files {
		if err := out.read(path, ends); err != nil {
			return nil, err
		}
	}
	for i := range out.Execs {
		out.Execs[i].EndMS = ends[out.Execs[i].Invocation]
	}
	return out, nil
}

type logLine struct {
	Message    string  `json:"message"`
	Invocation string  `json:"invocation"`
	Trigger    string  `json:"trigger"`
	ID         string  `json:"id"`
	Attempt    int     `json:"attempt"`
	TMS        int64   `json:"t_ms"`
	LatMS      float64 `json:"lat_ms"`
	Batch      *int    `json:"batch"`
	Acked      int     `json:"acked"`
	Retried    int     `json:"retried"`
	Dead       int     `json:"dead"`
	Refused    int     `json:"refused"`
	Error      string  `json:"error"`
}

func (l *Logs) read(path string, ends map[string]int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4<<20), 4<<20)
	for sc.Scan() {
		raw := sc.Bytes()
		if len(raw) == 0 || raw[0] != '{' {
			continue
		}
		var ln logLine
		if json.Unmarshal(raw, &ln) != nil {
			continue // cut short by a kill
		}
		l.Lines++
		switch {
		case ln.Message == "exec" && ln.Invocation != "":
			id, err := strconv.ParseInt(ln.ID, 10, 64)
			if err != nil {
				return fmt.Errorf("%s: exec line with id %q", path, ln.ID)
			}
			l.Execs = append(l.Execs, Execution{Log: path, Trigger: ln.Trigger, ID: id, Attempt: ln.Attempt,
				Invocation: ln.Invocation, StartMS: ln.TMS, LatencyMS: ln.LatMS})
		case ln.Message == "end" && ln.Invocation != "":
			ends[ln.Invocation] = ln.TMS
		case ln.Batch != nil && ln.Invocation != "" &&
			(ln.Message == "success" || ln.Message == "failure" || ln.Message == "partial_failure"):
			l.Settles[ln.Invocation] = Settle{Log: path, Outcome: ln.Message, Batch: *ln.Batch,
				Acked: ln.Acked, Retried: ln.Retried, Dead: ln.Dead, Error: ln.Error}
		case strings.HasPrefix(ln.Message, "claim not committed") && ln.Invocation != "":
			l.Dropped[ln.Invocation] = true
		case strings.HasPrefix(ln.Message, "acks refused"):
			l.Refused += ln.Refused
		}
	}
	return sc.Err()
}

// For returns the executions of one trigger, by message id, each list in
// attempt then start order. trigger is the trigger's name as log lines
// carry it, or queue:<queue> for every trigger a manifest derived a name
// for on that queue (queue:<queue>:<function>).
func (l *Logs) For(trigger string) map[int64][]Execution {
	out := map[int64][]Execution{}
	for _, x := range l.Execs {
		if x.Trigger == trigger || strings.HasPrefix(trigger, "queue:") && strings.HasPrefix(x.Trigger, trigger+":") {
			out[x.ID] = append(out[x.ID], x)
		}
	}
	for _, xs := range out {
		sort.Slice(xs, func(i, j int) bool {
			if xs[i].Attempt != xs[j].Attempt {
				return xs[i].Attempt < xs[j].Attempt
			}
			return xs[i].StartMS < xs[j].StartMS
		})
	}
	return out
}
