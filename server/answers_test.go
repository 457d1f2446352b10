package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/wire"
)

// writeMessages writes what writeJSON of the list would, byte for byte.
func TestWriteMessagesIsTheListsJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	msg := func(seq int64, body string) wire.Message {
		return wire.Message{Sequence: seq, Body: json.RawMessage(body), Headers: json.RawMessage(`null`), CreatedAt: at,
			VisibleAt: at, ReceiveCount: 1, Receipt: "r", Group: "g"}
	}
	for _, c := range []struct {
		name string
		list any
		ms   func(http.ResponseWriter)
	}{
		{"empty", wire.MessageList{Messages: []wire.Message{}},
			func(w http.ResponseWriter) { writeMessages(w, []wire.Message{}, 0) }},
		{"one", wire.MessageList{Messages: []wire.Message{msg(1, `{"a": "<&>"}`)}},
			func(w http.ResponseWriter) { writeMessages(w, []wire.Message{msg(1, `{"a": "<&>"}`)}, 0) }},
		{"page", wire.MessageList{Messages: []wire.Message{msg(1, `1`), msg(2, `"ü"`), msg(3, `[1, 2]`)}, Next: 3},
			func(w http.ResponseWriter) {
				writeMessages(w, []wire.Message{msg(1, `1`), msg(2, `"ü"`), msg(3, `[1, 2]`)}, 3)
			}},
		{"dead letters", wire.DeadLetterList{Messages: []wire.DeadLetter{{Sequence: 9, Body: json.RawMessage(`{}`),
			Headers: json.RawMessage(`null`), FailedAt: at, Reason: "max_receive_count", LastError: "boom"}}, Next: 9},
			func(w http.ResponseWriter) {
				writeMessages(w, []wire.DeadLetter{{Sequence: 9, Body: json.RawMessage(`{}`), Headers: json.RawMessage(`null`),
					FailedAt: at, Reason: "max_receive_count", LastError: "boom"}}, 9)
			}},
	} {
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		writeJSON(want, http.StatusOK, c.list)
		c.ms(got)
		if got.Code != http.StatusOK || got.Header().Get("Content-Type") != "application/json" || got.Body.String() != want.Body.String() {
			t.Errorf("%s: %d %q\n%s\nwant %d %q\n%s", c.name, got.Code, got.Header().Get("Content-Type"), got.Body,
				want.Code, want.Header().Get("Content-Type"), want.Body)
		}
	}
}

// A page's answer is not built whole: while its client reads slowly (here:
// not at all), the server holds the messages and the one being written,
// not an encoded copy of all of them. writeJSON, which encodes the answer
// whole, is measured the same way to show what the measure sees.
func TestMessageAnswersAreNotBuiltWhole(t *testing.T) {
	// Not parallel: it measures the heap.
	ms := make([]wire.Message, 100)
	for i := range ms {
		ms[i] = wire.Message{Sequence: int64(i + 1), Body: json.RawMessage(`"` + strings.Repeat(fmt.Sprintf("%x", i%16), 80<<10) + `"`)}
	}
	const page = 100 * 80 << 10 // 8 MiB of bodies
	grown := func(write func(http.ResponseWriter)) int64 {
		w := &stalledWriter{header: http.Header{}, stalled: make(chan struct{}), release: make(chan struct{})}
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		done := make(chan struct{})
		go func() {
			defer close(done)
			write(w)
		}()
		<-w.stalled // the client stopped reading at the first message
		runtime.GC()
		var during runtime.MemStats
		runtime.ReadMemStats(&during)
		close(w.release)
		<-done
		return int64(during.HeapAlloc) - int64(before.HeapAlloc)
	}
	whole := grown(func(w http.ResponseWriter) { writeJSON(w, http.StatusOK, wire.MessageList{Messages: ms}) })
	streamed := grown(func(w http.ResponseWriter) { writeMessages(w, ms, 0) })
	t.Logf("live heap grown while the client does not read: encoded whole %d KiB, a message at a time %d KiB", whole>>10, streamed>>10)
	if whole < page {
		t.Fatalf("the whole answer grew the heap by %d bytes, less than its %d bytes of bodies: the measure does not see it", whole, page)
	}
	if streamed > 1<<20 {
		t.Errorf("writeMessages held %d bytes beyond the messages while the client did not read, want less than 1 MiB (a message is 80 KiB)", streamed)
	}
}

// stalledWriter is a client that stops reading at the first write of a
// message (more than 1 KiB): that write waits until release is closed.
type stalledWriter struct {
	header  http.Header
	stalled chan struct{}
	release chan struct{}
	once    bool
}

func (w *stalledWriter) Header() http.Header { return w.header }
func (w *stalledWriter) WriteHeader(int)     {}
func (w *stalledWriter) Write(b []byte) (int, error) {
	if len(b) > 1<<10 && !w.once {
		w.once = true
		close(w.stalled)
		<-w.release
	}
	return len(b), nil
}
