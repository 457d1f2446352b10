// Command record logs every execution of every message it gets, for the
// reliability suite (reliability/): one "exec" line per message at the start
// of a batch (message id, attempt, the batch's start time in Unix
// milliseconds, the message's send-to-function latency, and the batch's
// start and the message's creation in Unix microseconds) and one "end"
// line when the batch is done, so a checker reading the server's logs knows
// what ran, how often, when, and whether the function got to its end.
//
// A message body may steer it:
//
//	{"sleep_ms": {"1": 5000, "*": 100}}  sleep before returning: per attempt, "*" for any other
//	{"fail": true}                        fail the message (retryable) every time
//	{"fail_until": 2}                     fail attempts 1 and 2 (retryable), succeed from the 3rd
//	{"emit": "QUEUE"}                     emit {"from": <message id>} to QUEUE for the message (ABI v1.1)
//
// RECORD_SLEEP_MS in the function's env is a default sleep per batch.
package main

import (
	"errors"
	"os"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

type steer struct {
	SleepMS map[string]int `json:"sleep_ms"`
	Fail    bool           `json:"fail"`
	FailTo  int            `json:"fail_until"`
	Emit    string         `json:"emit"`
}

func main() {
	defaultSleep, _ := strconv.Atoi(os.Getenv("RECORD_SLEEP_MS"))
	sdk.Handle(func(ctx sdk.Context, b sdk.Batch) sdk.Result {
		start := time.Now()
		sleep := defaultSleep
		var res sdk.Result
		for _, m := range b.Messages {
			var s steer
			_ = m.Decode(&s)
			ctx.Log("exec", "id", m.ID, "attempt", m.Attempt, "t_ms", start.UnixMilli(),
				"lat_ms", float64(start.Sub(m.CreatedAt).Microseconds())/1000,
				"s_us", start.UnixMicro(), "c_us", m.CreatedAt.UnixMicro())
			if ms, ok := s.SleepMS[strconv.Itoa(m.Attempt)]; ok {
				sleep = max(sleep, ms)
			} else if ms, ok := s.SleepMS["*"]; ok {
				sleep = max(sleep, ms)
			}
			if s.Emit != "" {
				res.Emit(sdk.Emit{Queue: s.Emit, Body: map[string]string{"from": m.ID}, For: m.ID})
			}
			if s.Fail {
				res.Retry(m.ID, 0, errors.New("record: message "+m.ID+" is poison"))
			} else if m.Attempt <= s.FailTo {
				res.Retry(m.ID, 0, errors.New("record: message "+m.ID+" fails attempt "+strconv.Itoa(m.Attempt)))
			}
		}
		if sleep > 0 {
			time.Sleep(time.Duration(sleep) * time.Millisecond)
		}
		ctx.Log("end", "messages", len(b.Messages), "t_ms", time.Now().UnixMilli())
		return res
	})
}
