package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/trace"
	"testing"
)

// SLUICE_TRACE's startTrace writes an execution trace until stopped.
func TestStartTrace(t *testing.T) {
	if trace.IsEnabled() {
		t.Skip("a trace is already being taken (go test -trace)")
	}
	path := filepath.Join(t.TempDir(), "serve.trace")
	stop, err := startTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	if !trace.IsEnabled() {
		t.Error("trace not enabled after startTrace")
	}
	stop()
	if trace.IsEnabled() {
		t.Error("trace still enabled after stop")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("go 1.")) {
		t.Errorf("trace file starts with %q, want a Go execution trace header", data[:min(len(data), 16)])
	}
	if _, err := startTrace(filepath.Join(t.TempDir(), "missing", "x.trace")); err == nil {
		t.Error("startTrace into a missing folder: no error")
	}
}
