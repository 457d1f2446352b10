package main

import (
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/client"
)

// --file takes each documented shape, including the batch.json `sluice new`
// writes (a `sluice invoke` input), and refuses anything else naming them.
func TestParseInvokeFile(t *testing.T) {
	scaffolded, err := os.ReadFile("internal/scaffold/_templates/common/batch.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, file       string
		bodies, messages int
	}{
		{"array of bodies", `[{"a":1}, 2]`, 2, 0},
		{"bodies", `{"bodies": [1, 2, 3]}`, 3, 0},
		{"messages", `{"messages": [{"body": 1, "headers": {"k": "v"}}]}`, 0, 1},
		{"sluice new's batch.json", strings.ReplaceAll(string(scaffolded), "{{.Name}}", "hello"), 0, 3},
	} {
		var o client.InvokeOptions
		if err := parseInvokeFile([]byte(c.file), &o); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if len(o.Bodies) != c.bodies || len(o.Messages) != c.messages {
			t.Errorf("%s: %d bodies and %d messages, want %d and %d", c.name, len(o.Bodies), len(o.Messages), c.bodies, c.messages)
		}
	}
	var o client.InvokeOptions
	if err := parseInvokeFile([]byte(strings.ReplaceAll(string(scaffolded), "{{.Name}}", "hello")), &o); err == nil {
		if string(o.Messages[2].Body) != `{"permanent": true, "error": "cannot be handled"}` {
			t.Errorf("third message's body %s", o.Messages[2].Body)
		}
	}
	for _, bad := range []string{`{"mesages": []}`, `{"messages": [{"body": 1, "priority": 2}]}`} {
		err := parseInvokeFile([]byte(bad), &client.InvokeOptions{})
		if err == nil || !strings.Contains(err.Error(), "a sluice invoke input") {
			t.Errorf("%s: %v, want an error naming the shapes allowed", bad, err)
		}
	}
	if err := parseInvokeFile([]byte(`{"bodies": [1], "messages": [{"body": 2}]}`), &client.InvokeOptions{}); err == nil {
		t.Error("bodies and messages together: no error")
	}
}
