package sdk

import (
	"encoding/json"
	"fmt"
	"os"
)

// Context carries what a handler knows about its invocation and logs
// through the host.
type Context struct {
	// Function names the function and version being run.
	Function Function
	// Trigger says what produced the batch.
	Trigger Trigger
}

// Log writes an info event: msg plus key/value pairs (keys are strings,
// values any JSON-encodable value).
func (c Context) Log(msg string, kv ...any) { writeLog("info", msg, kv) }

// Error writes an error event, like Log.
func (c Context) Error(msg string, kv ...any) { writeLog("error", msg, kv) }

// writeLog writes one JSON log line to stderr.
func writeLog(level, msg string, kv []any) {
	fields := make(map[string]any, 2+len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			k = fmt.Sprint(kv[i])
		}
		v := kv[i+1]
		if err, ok := v.(error); ok {
			v = err.Error()
		}
		fields[k] = v
	}
	if len(kv)%2 == 1 {
		fields["!extra"] = kv[len(kv)-1]
	}
	fields["level"] = level
	fields["message"] = msg
	line, err := json.Marshal(fields)
	if err != nil {
		line, _ = json.Marshal(map[string]string{"level": level, "message": msg, "log_error": err.Error()})
	}
	os.Stderr.Write(append(line, '\n'))
}
