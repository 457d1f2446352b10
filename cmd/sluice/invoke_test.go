package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/wasmbuild"
)

func runInvokeCLI(t *testing.T, args ...string) (code int, out invokeOutput, stderr string) {
	t.Helper()
	var so, se bytes.Buffer
	code = run(context.Background(), append([]string{"invoke", "--cache-dir", compiledCacheDir(t)}, args...), &so, &se)
	if code == 0 {
		if err := json.Unmarshal(so.Bytes(), &out); err != nil {
			t.Fatalf("output %q: %v", so.String(), err)
		}
	}
	return code, out, se.String()
}

func TestInvokeCommand(t *testing.T) {
	t.Parallel()
	flaky, err := wasmbuild.Build(context.Background(), "flaky", wasmbuild.Reactor)
	if err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runInvokeCLI(t, flaky, "--body", `{"fail_until_attempt":2}`, "--body", `{}`, "--env", "FLAKY_RETRY_SECONDS=7", "--timeout", "10s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if out.Kind != "reactor" || out.OK || len(out.Acked) != 1 || out.Acked[0] != "2" || len(out.Failed) != 1 {
		t.Fatalf("output %+v", out)
	}
	if len(out.Logs) == 0 {
		t.Fatal("no logs in the output")
	}
	if f := out.Failed[0]; f.ID != "1" || f.Outcome != "retry" || f.RetryAfterSeconds != 7 || !strings.Contains(f.Error, "attempt 1 of 2") {
		t.Fatalf("failed entry %+v", f)
	}
	if fn, _ := out.Logs[0]["function"].(string); !strings.HasPrefix(fn, "flaky-reactor") {
		t.Fatalf("logs %v", out.Logs)
	}

	// A batch file with a trigger, ids and attempts; flags after the path.
	batch := filepath.Join(t.TempDir(), "batch.json")
	os.WriteFile(batch, []byte(`{"trigger":{"type":"queue","source":"jobs"},"messages":[{"id":"a","attempt":2,"body":{"fail_until_attempt":2}}]}`), 0o644)
	code, out, stderr = runInvokeCLI(t, "--input", batch, flaky, "--timeout", "2m")
	if code != 0 || !out.OK || len(out.Acked) != 1 || out.Acked[0] != "a" {
		t.Fatalf("exit %d, output %+v, stderr %s", code, out, stderr)
	}
}

func TestInvokeReportsBatchFailure(t *testing.T) {
	t.Parallel()
	hostile, err := wasmbuild.Build(context.Background(), "runtime/testdata/hostile", wasmbuild.Command)
	if err != nil {
		t.Fatal(err)
	}
	// The batch's time limit is generous: instantiating a Go command module
	// on a machine busy with other tests can take seconds, and what is
	// tested here is the exit code.
	code, out, stderr := runInvokeCLI(t, hostile, "--body", `{"do":"exit"}`, "--timeout", "2m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if out.Failure == nil || out.Failure.Kind != "exit_code" || out.Failure.ExitCode != 3 || len(out.Failed) != 1 {
		t.Fatalf("output %+v", out)
	}
}

func TestInvokeErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.wasm")
	os.WriteFile(bad, wasmbuild.Handwritten("unknown-import"), 0o644)
	good := filepath.Join(dir, "trap.wasm")
	os.WriteFile(good, wasmbuild.Handwritten("trap"), 0o644)
	badInput := filepath.Join(dir, "in.json")
	os.WriteFile(badInput, []byte(`{"messages":[{"body":`), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{}, 2, "exactly one FUNCTION.wasm"},
		{[]string{good}, 2, "either --input or at least one --body"},
		{[]string{good, "--body", "{nope"}, 2, "not valid JSON"},
		{[]string{good, "--body", "1", "--env", "novalue"}, 2, "not K=V"},
		{[]string{good, "--bogus"}, 2, "flag provided but not defined"},
		{[]string{bad, "--body", "1"}, 1, `unknown import "env"."foo"`},
		{[]string{filepath.Join(dir, "missing.wasm"), "--body", "1"}, 1, "read module"},
		{[]string{good, "--input", badInput}, 1, "unexpected EOF"},
	} {
		code, _, stderr := runInvokeCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("invoke %v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}
