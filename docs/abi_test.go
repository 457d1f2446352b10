// Package docs_test checks docs/function-abi.md: its example documents
// against the JSON Schemas in docs/schemas, and both against the runtime.
package docs_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/runtime"
)

// example is a ```json example=KIND block of the ABI page.
type example struct {
	kind string // input, output, output-v1.1 or invalid-output
	line int
	text string
}

func examples(t *testing.T) []example {
	t.Helper()
	f, err := os.Open("function-abi.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out []example
		cur *example
		sc  = bufio.NewScanner(f)
		n   int
	)
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```json example="):
			cur = &example{kind: strings.TrimPrefix(line, "```json example="), line: n}
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("function-abi.md:%d: example block never closed", cur.line)
	}
	return out
}

func schema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	s, err := c.Compile("schemas/" + name)
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	return s
}

func validate(s *jsonschema.Schema, doc string) error {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

func TestExamplesMatchSchemas(t *testing.T) {
	t.Parallel()
	batch, result := schema(t, "batch.schema.json"), schema(t, "result.schema.json")
	count := map[string]int{}
	for _, ex := range examples(t) {
		count[ex.kind]++
		var err error
		switch ex.kind {
		case "input":
			err = validate(batch, ex.text)
		case "output", "output-v1.1":
			err = validate(result, ex.text)
		case "invalid-output":
			if validate(result, ex.text) == nil {
				t.Errorf("function-abi.md:%d: invalid-output example is valid against result.schema.json:\n%s", ex.line, ex.text)
			}
			continue
		default:
			t.Errorf("function-abi.md:%d: unknown example kind %q", ex.line, ex.kind)
			continue
		}
		if err != nil {
			t.Errorf("function-abi.md:%d: %s example does not match its schema: %v\n%s", ex.line, ex.kind, err, ex.text)
		}
	}
	for _, k := range []string{"input", "output", "output-v1.1", "invalid-output"} {
		if count[k] == 0 {
			t.Errorf("function-abi.md has no %s example", k)
		}
	}
	// Outputs the page says mean "all succeeded".
	for _, doc := range []string{`{}`, `null`, `{"batchItemFailures":[]}`, `{"batchItemFailures":null}`} {
		if err := validate(result, doc); err != nil {
			t.Errorf("result schema rejects %s: %v", doc, err)
		}
	}
	// v1.1 emits name exactly one target.
	for _, doc := range []string{`{"emit":[{"body":1}]}`, `{"emit":[{"queue":"a","topic":"b","body":1}]}`, `{"emit":[{"queue":"a"}]}`} {
		if validate(result, doc) == nil {
			t.Errorf("result schema accepts %s", doc)
		}
	}
}

// TestExamplesMatchRuntime runs the page's input example through the
// runtime with a guest that echoes its input to stderr and writes each
// output example: what the runtime sends must match the batch schema, and
// it must read the output examples the way the page says.
func TestExamplesMatchRuntime(t *testing.T) {
	t.Parallel()
	batch := schema(t, "batch.schema.json")
	exs := examples(t)
	var in struct {
		Function struct {
			Name    string `json:"name"`
			Version int    `json:"version"`
		} `json:"function"`
		Trigger struct {
			Type   string `json:"type"`
			Source string `json:"source"`
		} `json:"trigger"`
		Messages []struct {
			ID        string          `json:"id"`
			Attempt   int             `json:"attempt"`
			CreatedAt time.Time       `json:"created_at"`
			Headers   json.RawMessage `json:"headers"`
			Body      json.RawMessage `json:"body"`
		} `json:"messages"`
	}
	for _, ex := range exs {
		if ex.kind == "input" {
			if err := json.Unmarshal([]byte(ex.text), &in); err != nil {
				t.Fatalf("function-abi.md:%d: %v", ex.line, err)
			}
			break
		}
	}
	inv := runtime.Invocation{ID: "abi-doc", Trigger: runtime.Trigger{Type: in.Trigger.Type, Source: in.Trigger.Source}}
	for _, m := range in.Messages {
		inv.Messages = append(inv.Messages, runtime.Message{ID: m.ID, Attempt: m.Attempt, CreatedAt: m.CreatedAt, Headers: m.Headers, Body: m.Body})
	}
	wasm := wasmbuild.MustRead(t, "docs/testdata/abi-probe", wasmbuild.Command)
	ctx := context.Background()
	cache, err := wasmbuild.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: filepath.Join(cache, "wazero")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(ctx) })
	// Functions stay loaded until rt closes, so the module is rewritten and
	// compiled once for all of them.
	run := func(output string) runtime.Result {
		t.Helper()
		f, err := rt.Load(ctx, wasm, runtime.FunctionConfig{Name: in.Function.Name, Version: in.Function.Version,
			Env: map[string]string{"OUTPUT": output}, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		res, err := f.Invoke(ctx, inv)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	res := run("")
	if !res.OK() {
		t.Fatalf("empty output: %+v %v, want every message acked", res.Messages, res.Failure)
	}
	sent := string(bytes.TrimSpace(res.Stderr))
	if err := validate(batch, sent); err != nil {
		t.Fatalf("the runtime's input document does not match batch.schema.json: %v\n%s", err, sent)
	}
	var doc, want any
	_ = json.Unmarshal([]byte(sent), &doc)
	for _, ex := range exs {
		if ex.kind == "input" {
			_ = json.Unmarshal([]byte(ex.text), &want)
			break
		}
	}
	if a, b := mustJSON(t, doc), mustJSON(t, want); a != b {
		t.Fatalf("the runtime sent\n%s\nfor the page's input example\n%s", a, b)
	}

	for _, ex := range exs {
		switch ex.kind {
		case "output":
			res := run(ex.text)
			if res.Failure != nil {
				t.Errorf("function-abi.md:%d: the runtime fails the output example: %v", ex.line, res.Failure)
				continue
			}
			// The page says: 8412 retried in 60 s, 8413 acked, 8415 dead.
			got := map[string]runtime.MessageResult{}
			for _, m := range res.Messages {
				got[m.ID] = m
			}
			if m := got["8412"]; m.Outcome != runtime.Retry || m.RetryAfter != time.Minute || m.Error == "" {
				t.Errorf("function-abi.md:%d: message 8412 = %+v, want a retry after 60s with its error", ex.line, m)
			}
			if m := got["8413"]; m.Outcome != runtime.Acked {
				t.Errorf("function-abi.md:%d: message 8413 = %+v, want acked", ex.line, m)
			}
			if m := got["8415"]; m.Outcome != runtime.Permanent {
				t.Errorf("function-abi.md:%d: message 8415 = %+v, want permanent", ex.line, m)
			}
		case "output-v1.1":
			// The page says: 8413 retried in 30 s; the emit for 8412 and
			// the topic emit are read, the latter without for.
			res := run(ex.text)
			if res.Failure != nil {
				t.Errorf("function-abi.md:%d: the runtime fails the v1.1 output example: %v", ex.line, res.Failure)
				continue
			}
			if len(res.Emits) != 2 || res.Emits[0].Queue != "shipped" || res.Emits[0].For != "8412" ||
				res.Emits[1].Topic != "audit" || res.Emits[1].For != "" {
				t.Errorf("function-abi.md:%d: the runtime read the emits as %+v", ex.line, res.Emits)
			}
		case "invalid-output":
			if res := run(ex.text); res.Failure == nil || res.Failure.Kind != runtime.FailureInvalidOutput {
				t.Errorf("function-abi.md:%d: the runtime read the invalid-output example as %+v, failure %v; want invalid_output", ex.line, res.Messages, res.Failure)
			}
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
