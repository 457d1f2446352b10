package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/client"
)

// mq send's per-message options: a BODY argument, --delay, --ttl,
// repeated --header, --dedup-key, --entries FILE; mq receive --delete.
func TestCLIMQSendOptions(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("queues", "create", "jobs")

	var one, again struct{ Sequence int64 }
	c.json(&one, "mq", "send", "jobs", "{n:1}", "--header", "trace=abc", "--header", "kind=x=y", "--ttl", "5m", "--dedup-key", "k1")
	c.json(&again, "mq", "send", "jobs", "{n:2}", "--dedup-key", "k1")
	if one.Sequence < 1 || again.Sequence != one.Sequence {
		t.Fatalf("dedup: %d then %d", one.Sequence, again.Sequence)
	}
	c.ok("mq", "send", "jobs", "{later:true}", "--delay", "30s")
	var batch struct{ Sequences []int64 }
	c.json(&batch, "mq", "send", "jobs", "--body", "[1,2]", "--header", "b=1", "--ttl", "60")

	dir := t.TempDir()
	file := filepath.Join(dir, "entries.json")
	if err := os.WriteFile(file, []byte(`{"entries": [
		{"body": {"e": 1}, "headers": {"own": "yes"}},
		{"body": "two", "delay_seconds": 3600, "dedup_key": "e2"},
		{"body": [3]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var ents struct{ Sequences []int64 }
	c.json(&ents, "mq", "send", "jobs", "--entries", file, "--header", "default=1")
	if len(ents.Sequences) != 3 {
		t.Fatalf("entries: %v", ents.Sequences)
	}
	bare := filepath.Join(dir, "bare.json")
	if err := os.WriteFile(bare, []byte(`[{"body": "bare"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := c.ok("mq", "send", "jobs", "--entries", bare); !strings.Contains(out, "sent 1 message to jobs") {
		t.Errorf("bare entries: %q", out)
	}

	var peeked struct{ Messages []client.Message }
	c.json(&peeked, "mq", "peek", "jobs")
	// Ready: n:1, 1, 2, {e:1}, [3], "bare" (the delayed two are not).
	if len(peeked.Messages) != 6 {
		t.Fatalf("peek: %+v", peeked.Messages)
	}
	headers := map[string]string{}
	for _, m := range peeked.Messages {
		headers[headersText(m.Body)] = headersText(m.Headers)
	}
	for body, want := range map[string]string{`{"n":1}`: `{"kind":"x=y","trace":"abc"}`, `1`: `{"b":"1"}`,
		`{"e":1}`: `{"own":"yes"}`, `[3]`: `{"default":"1"}`, `"bare"`: `-`} {
		if headers[body] != want {
			t.Errorf("message %s has headers %s, want %s", body, headers[body], want)
		}
	}
	if out := c.ok("mq", "peek", "jobs"); !strings.Contains(out, "HEADERS") || !strings.Contains(out, `{"own":"yes"}`) {
		t.Errorf("peek table lacks headers:\n%s", out)
	}

	var got struct{ Messages []client.Message }
	c.json(&got, "mq", "receive", "jobs", "--max-messages", "10", "--delete")
	if len(got.Messages) != 6 || got.Messages[0].Receipt != "" {
		t.Fatalf("receive --delete: %+v", got.Messages)
	}
	c.json(&peeked, "mq", "peek", "jobs")
	if len(peeked.Messages) != 0 {
		t.Fatalf("%d left after receive --delete", len(peeked.Messages))
	}
}

func TestCLIMQSendOptionErrors(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("queues", "create", "q")
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	nobody := write("nobody.json", `{"entries": [{"body": 1}, {"headers": {"k": "v"}}]}`)
	badHeader := write("badheader.json", `[{"body": 1, "headers": {"k": 1}}]`)
	unknown := write("unknown.json", `[{"body": 1, "priority": "g"}]`)
	empty := write("empty.json", `{"entries": []}`)
	farDelay := write("delay.json", `[{"body": 1, "delay_seconds": 43201}]`)
	for _, tt := range []struct {
		args    []string
		pattern string
	}{
		{[]string{"mq", "send", "q", "{a:1}", "--delay", "13h"}, `--delay 13h: give whole seconds from 0s to 12h0m0s`},
		{[]string{"mq", "send", "q", "{a:1}", "--delay", "1.5s"}, `--delay 1.5s: give whole seconds`},
		{[]string{"mq", "send", "q", "{a:1}", "--delay", "soon"}, `--delay soon: give a duration like 30s`},
		{[]string{"mq", "send", "q", "{a:1}", "--delay", "5s", "--delay-seconds", "5"}, `--delay or --delay-seconds, not both`},
		{[]string{"mq", "send", "q", "{a:1}", "--ttl", "0s"}, `--ttl 0s: give whole seconds from 1s to 336h0m0s`},
		{[]string{"mq", "send", "q", "{a:1}", "--ttl", "337h"}, `--ttl 337h`},
		{[]string{"mq", "send", "q", "{a:1}", "--header", "novalue"}, `"novalue": use KEY=VALUE`},
		{[]string{"mq", "send", "q", "{a:1}", "--header", "=v"}, `use KEY=VALUE`},
		{[]string{"mq", "send", "q", "{a:1}", "--header", "k=1", "--header", "k=2"}, `header "k" is given twice`},
		{[]string{"mq", "send", "q", "[1,2]", "--dedup-key", "k"}, `dedup key`},
		{[]string{"mq", "send", "q", "{a:1}", "--body", "{b:1}"}, `not both`},
		{[]string{"mq", "send", "q", "{a:1}", "--entries", nobody}, `--entries FILE or a body`},
		{[]string{"mq", "send", "q", "--entries", nobody, "--dedup-key", "k"}, `--dedup-key applies to a single message`},
		{[]string{"mq", "send", "q", "--entries", nobody}, `entry 1: no body`},
		{[]string{"mq", "send", "q", "--entries", badHeader}, `entries\[0\]: cannot unmarshal number into .*headers`},
		{[]string{"mq", "send", "q", "--entries", unknown}, `entries\[0\]: unknown field "priority"`},
		{[]string{"mq", "send", "q", "--entries", empty}, `give 1 to 1000 entries, got 0`},
		{[]string{"mq", "send", "q", "--entries", farDelay}, `delay_seconds 43201: must be 0 to 43200`},
	} {
		c.fails(2, tt.pattern, tt.args...)
	}
	c.fails(1, `--entries: open`, "mq", "send", "q", "--entries", filepath.Join(dir, "missing.json"))
}
