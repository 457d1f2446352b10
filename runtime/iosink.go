package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// invocationIO is the per-invocation state behind a module instance's
// stdout, stderr and sleep: command instances get a fresh one, reactor
// instances switch to the current invocation's.
type invocationIO struct {
	stdout     []byte
	stdoutCap  int
	overflow   bool
	onOverflow func() // cancels the invocation once stdout overflows
	stderr     stderrSink
	done       <-chan struct{} // closed when the invocation must stop
	// Long-running invocations share the runtime's long slots (see
	// instance.yield); started is when this one began.
	started time.Time
	begun   time.Time // when the guest first read its batch
	long    *longSlots
	holding bool   // holds one of the long slots
	lowered bool   // and runs on a thread of lowered priority
	ticks   uint32 // yield ticks since the slot was taken
}

// writeStdout keeps up to stdoutCap bytes of output; past that it marks the
// overflow and stops the invocation, reporting success to the guest so it
// does not misbehave further before the host stops it.
func (io *invocationIO) writeStdout(p []byte) (int, error) {
	if io.overflow {
		return len(p), nil
	}
	if len(io.stdout)+len(p) > io.stdoutCap {
		io.overflow = true
		io.stdout = append(io.stdout, p[:io.stdoutCap-len(io.stdout)]...)
		if io.onOverflow != nil {
			io.onOverflow()
		}
		return len(p), nil
	}
	io.stdout = append(io.stdout, p...)
	return len(p), nil
}

// batchInput is a command's stdin: its batch. It notes when the guest
// first reads it.
type batchInput struct {
	bytes.Reader
	io *invocationIO
}

func (b *batchInput) Read(p []byte) (int, error) {
	if b.io.begun.IsZero() {
		b.io.begun = time.Now()
	}
	return b.Reader.Read(p)
}

// stderrSink captures a function's stderr up to a limit and logs every
// complete line as an event.
type stderrSink struct {
	base    *zerolog.Logger // the function's logger (function, version)
	invID   string
	trigger string
	log     *zerolog.Logger // base plus invocation and trigger, built on first use
	stream  string

	limit   int
	buf     []byte // captured bytes, at most limit
	logged  int    // buf[:logged] has been logged
	dropped int
	notable string // first panic or fatal error line (Go or Rust), for failure messages
}

// Write implements io.Writer.
func (s *stderrSink) Write(p []byte) (int, error) {
	room := s.limit - len(s.buf)
	if room <= 0 {
		s.dropped += len(p)
		return len(p), nil
	}
	take := p
	if len(take) > room {
		take = take[:room]
		s.dropped += len(p) - room
	}
	s.buf = append(s.buf, take...)
	for {
		i := bytes.IndexByte(s.buf[s.logged:], '\n')
		if i < 0 {
			break
		}
		s.emit(s.buf[s.logged : s.logged+i])
		s.logged += i + 1
	}
	return len(p), nil
}

// finish logs a trailing partial line and the truncation marker, and
// returns the captured bytes.
func (s *stderrSink) finish() []byte {
	if s.logged < len(s.buf) {
		s.emit(s.buf[s.logged:])
		s.logged = len(s.buf)
	}
	if s.dropped > 0 {
		marker := fmt.Sprintf("[sluice: stderr over %d bytes, %d bytes dropped]", s.limit, s.dropped)
		s.logger().Warn().Int("dropped_bytes", s.dropped).Msg(marker)
		if len(s.buf) > 0 && s.buf[len(s.buf)-1] != '\n' {
			s.buf = append(s.buf, '\n')
		}
		s.buf = append(s.buf, marker...)
		s.buf = append(s.buf, '\n')
		s.dropped = 0
	}
	return s.buf
}

func (s *stderrSink) logger() *zerolog.Logger {
	if s.log == nil {
		c := s.base.With().Str("invocation", s.invID)
		if s.trigger != "" {
			c = c.Str("trigger", s.trigger)
		}
		l := c.Logger()
		s.log = &l
	}
	return s.log
}

// hostLogKeys are the keys of a function's log lines that the host sets
// (zerolog's time among them, when the logger writes one).
var hostLogKeys = []string{"account", "function", "version", "invocation", "trigger", "stream", zerolog.TimestampFieldName}

// functionLogger is the runtime's logger with the function's account (when
// set), name and version: hostLogKeys' first.
func functionLogger(l zerolog.Logger, cfg FunctionConfig) zerolog.Logger {
	c := l.With()
	if cfg.Account != "" {
		c = c.Str("account", cfg.Account)
	}
	return c.Str("function", cfg.Name).Int("version", cfg.Version).Logger()
}

// emit logs one line: a JSON object line (as the SDK writes) keeps its
// level, message and fields; anything else is logged as text at info level.
func (s *stderrSink) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(line) == 0 {
		return
	}
	if s.notable == "" && (bytes.HasPrefix(line, []byte("panic: ")) || bytes.HasPrefix(line, []byte("fatal error: ")) ||
		bytes.HasPrefix(line, []byte("thread '")) && bytes.Contains(line, []byte("panicked at"))) {
		s.notable = string(line)
	}
	l := s.logger()
	if line[0] == '{' {
		var fields map[string]any
		if json.Unmarshal(line, &fields) == nil {
			level := zerolog.InfoLevel
			if lv, ok := fields["level"].(string); ok {
				if pl, err := zerolog.ParseLevel(lv); err == nil && pl != zerolog.NoLevel {
					level = pl
				}
			}
			msg, _ := fields["message"].(string)
			if msg == "" {
				msg, _ = fields["msg"].(string)
			}
			delete(fields, "level")
			delete(fields, "message")
			delete(fields, "msg")
			// Fixed keys set by the host win over the guest's, and a guest
			// passes for no other account, nor writes a second time.
			for _, k := range hostLogKeys {
				delete(fields, k)
			}
			l.WithLevel(level).Str("stream", s.stream).Fields(fields).Msg(msg)
			return
		}
	}
	l.Info().Str("stream", s.stream).Msg(string(line))
}

// stderrWriter and stdoutWriter route an instance's output to its current
// invocation.
type (
	stderrWriter struct{ inst *instance }
	stdoutWriter struct{ inst *instance }
)

func (w stderrWriter) Write(p []byte) (int, error) {
	w.inst.await()
	if io := w.inst.io; io != nil {
		return io.stderr.Write(p)
	}
	return len(p), nil
}

func (w stdoutWriter) Write(p []byte) (int, error) {
	w.inst.await()
	io := w.inst.io
	if io == nil {
		return len(p), nil
	}
	if w.inst.reactor {
		// A reactor's output travels through sluice_handle's result; what
		// it prints is logged like stderr.
		return io.stderr.Write(p)
	}
	return io.writeStdout(p)
}
