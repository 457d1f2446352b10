package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/cmd/sluice/internal/relaxedjson"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/triggers"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// runInvoke runs a function module on one batch locally and prints the
// outcome as JSON.
func runInvoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("invoke", stderr)
	var (
		bodies   stringList
		envs     stringList
		input    = fs.String("input", "", "read the batch from this JSON file (- for stdin): {\"trigger\":{…},\"messages\":[{\"id\",\"attempt\",\"headers\",\"body\"}…]} or an array of bodies")
		timeout  = fs.Duration("timeout", 5*time.Second, "wall-clock limit for the batch")
		memoryMB = fs.Int("memory-mb", runtime.DefaultMemoryMiB, "memory limit in MiB")
		name     = fs.String("name", "", "function name passed to the module (default: the file name)")
		trigger  = fs.String("trigger", "invoke:local", "trigger as type:source")
		cacheDir = fs.String("cache-dir", defaultInvokeCacheDir(), "compilation cache folder (empty: none)")
		file     = fs.String("f", "sluice.yaml", "app manifest, for a FUNCTION given by name")
		schema   = fs.String("schema", envOr("SLUICE_SCHEMA", "sluice"), "with DATABASE_URL: the database schema of the key-value stores [SLUICE_SCHEMA]")
		account  = fs.String("account", client.DefaultAccount, "with DATABASE_URL: the account whose key-value stores the function uses")
		emits    stringList
		hosts    stringList
		stores   stringList
	)
	fs.Var(&bodies, "body", "a message body as JSON (repeat for more messages)")
	fs.Var(&envs, "env", "an environment variable K=V for the module (repeatable)")
	fs.Var(&emits, "emits", "a queue or topic pattern the function may emit to, e.g. orders-* (repeatable; added to the manifest's emits)")
	fs.Var(&hosts, "allow-host", "a URL pattern the function may call over HTTP, e.g. http://127.0.0.1:* (repeatable; added to the manifest's allowed_outbound_hosts)")
	fs.Var(&stores, "store", "a key-value store the function may open (repeatable; added to the manifest's stores); in DATABASE_URL when set, else in memory for this run")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sluice invoke FUNCTION.wasm|FUNCTION [--input batch.json | --body JSON ...] [--timeout 5s] [--memory-mb 64] [--env K=V]")
		fmt.Fprintln(stderr, "                     [-f sluice.yaml] [--emits PATTERN] [--allow-host URL] [--store NAME]")
		fmt.Fprintln(stderr, "\nRuns the function on one batch and prints the outcome as JSON; exits 0 when the function ran,")
		fmt.Fprintln(stderr, "whatever the messages' outcomes, and non-zero when it could not be loaded or the input is invalid.")
		fmt.Fprintln(stderr, "A FUNCTION that is not a file is a function of the manifest (-f): it is built as sluice deploy")
		fmt.Fprintln(stderr, "builds it and runs with the manifest's memory, timeout, env, emits, allowed_outbound_hosts and")
		fmt.Fprintln(stderr, "stores (flags add to them or override). Emitted messages are listed, never sent; HTTP calls are")
		fmt.Fprintln(stderr, "real; key-value stores are DATABASE_URL's when it is set, else in memory for this run.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	// Flags may come before or after the module path.
	positional, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return err
	} else if err != nil {
		return usageErrorf("%v", err)
	}
	if len(positional) != 1 {
		return usageErrorf("want exactly one FUNCTION.wasm argument, got %d", len(positional))
	}
	if (*input == "") == (len(bodies) == 0) {
		return usageErrorf("give either --input or at least one --body")
	}
	env := map[string]string{}
	for _, kv := range envs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usageErrorf("--env %q is not K=V", kv)
		}
		env[k] = v
	}
	trigType, trigSource, _ := strings.Cut(*trigger, ":")

	path := positional[0]
	var wasm []byte
	var mf manifest.Function
	if st, err := os.Stat(path); err == nil && !st.IsDir() || strings.HasSuffix(path, ".wasm") {
		if wasm, err = os.ReadFile(path); err != nil {
			return fmt.Errorf("read module: %w", err)
		}
	} else {
		var err error
		if wasm, mf, err = invokeManifestFunction(ctx, *file, path); err != nil {
			return err
		}
		if *name == "" {
			*name = path
		}
		if !flagSet(fs, "memory-mb") && mf.MemoryMiB != 0 {
			*memoryMB = mf.MemoryMiB
		}
		if !flagSet(fs, "timeout") && mf.Timeout != 0 {
			*timeout = time.Duration(mf.Timeout)
		}
		for k, v := range mf.Env {
			if _, set := env[k]; !set {
				env[k] = v
			}
		}
	}
	caps := runtime.FunctionConfig{
		AllowedOutboundHosts: append(slices.Clone(mf.AllowedOutboundHosts), hosts...),
		Stores:               append(slices.Clone(mf.Stores), stores...),
	}
	emitPatterns := append(slices.Clone(mf.Emits), emits...)
	kvWhere := ""
	if len(caps.Stores) > 0 {
		service, where, closeKV, err := invokeKV(ctx, *schema, *account)
		if err != nil {
			return err
		}
		defer closeKV()
		caps.KV, kvWhere = service, where
	}
	inv := runtime.Invocation{ID: "local-" + strconv.FormatInt(time.Now().UnixNano(), 36), Trigger: runtime.Trigger{Type: trigType, Source: trigSource}}
	if *input != "" {
		if err := readInvokeInput(*input, &inv); err != nil {
			return err
		}
	} else {
		for i, b := range bodies {
			// Like `mq send`, --body takes strict JSON or the relaxed form.
			body, err := relaxedjson.Parse(b)
			if err != nil {
				return usageErrorf("--body %d is not valid JSON (nor the relaxed form): %v", i+1, err)
			}
			inv.Messages = append(inv.Messages, runtime.Message{ID: strconv.Itoa(i + 1), Body: body})
		}
	}
	now := time.Now().UTC()
	for i := range inv.Messages {
		if inv.Messages[i].Attempt == 0 {
			inv.Messages[i].Attempt = 1
		}
		if inv.Messages[i].CreatedAt.IsZero() {
			inv.Messages[i].CreatedAt = now
		}
	}
	if *name == "" {
		*name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}

	var logs bytes.Buffer
	rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: *cacheDir, Logger: zerolog.New(&logs)})
	if err != nil {
		return err
	}
	defer rt.Close(context.WithoutCancel(ctx))
	cfg := caps
	cfg.Name, cfg.Version, cfg.Env, cfg.MemoryMiB, cfg.Timeout, cfg.PoolSize = *name, 1, env, *memoryMB, *timeout, 1
	fn, err := rt.Load(ctx, wasm, cfg)
	if err != nil {
		return err
	}
	res, err := fn.Invoke(ctx, inv)
	if err != nil {
		return err
	}
	report := invokeReport(*name, fn.Kind(), res, logs.Bytes())
	report.Emits, report.KV = invokeEmits(res), kvWhere
	if err := triggers.CheckEmits(emitPatterns, res.Emits); err != nil {
		// A deployed function's batch fails as a whole with this.
		report.OK = false
		report.Failure = &invokeFailure{Kind: "invalid_output", Message: strings.TrimPrefix(err.Error(), "invalid_output: ")}
		for i := range report.Emits {
			report.Emits[i].Sent = false
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(report)
}

// flagSet reports whether flag name was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// invokeOutput is what sluice invoke prints.
type invokeOutput struct {
	Function   string           `json:"function"`
	Kind       string           `json:"kind"`
	OK         bool             `json:"ok"`
	DurationMS float64          `json:"duration_ms"`
	Acked      []string         `json:"acked"`
	Failed     []invokeFailed   `json:"failed"`
	Failure    *invokeFailure   `json:"failure,omitempty"`
	Logs       []map[string]any `json:"logs"`
	// Emits are the messages the function emitted (ABI v1.1), never sent.
	Emits []invokeEmit `json:"emits,omitempty"`
	// KV says where the key-value stores were: "memory" or the database.
	KV string `json:"kv,omitempty"`
}

type invokeFailed struct {
	ID                string `json:"id"`
	Outcome           string `json:"outcome"`
	RetryAfterSeconds int    `json:"retry_after_seconds,omitempty"`
	Error             string `json:"error"`
}

type invokeFailure struct {
	Kind     string `json:"kind"`
	ExitCode uint32 `json:"exit_code,omitempty"`
	Message  string `json:"message"`
}

func invokeReport(name string, kind runtime.Kind, res runtime.Result, logs []byte) invokeOutput {
	out := invokeOutput{
		Function:   name,
		Kind:       kind.String(),
		OK:         res.OK(),
		DurationMS: float64(res.Duration.Microseconds()) / 1000,
		Acked:      []string{},
		Failed:     []invokeFailed{},
		Logs:       []map[string]any{},
	}
	for _, m := range res.Messages {
		if m.Outcome == runtime.Acked {
			out.Acked = append(out.Acked, m.ID)
			continue
		}
		out.Failed = append(out.Failed, invokeFailed{ID: m.ID, Outcome: m.Outcome.String(), RetryAfterSeconds: int(m.RetryAfter / time.Second), Error: m.Error})
	}
	if f := res.Failure; f != nil {
		out.Failure = &invokeFailure{Kind: string(f.Kind), ExitCode: f.ExitCode, Message: f.Message}
	}
	for _, line := range bytes.Split(logs, []byte("\n")) {
		var ev map[string]any
		if len(line) > 0 && json.Unmarshal(line, &ev) == nil {
			out.Logs = append(out.Logs, ev)
		}
	}
	return out
}

// readInvokeInput reads a batch file: an object with optional trigger and
// messages, or an array of bodies.
func readInvokeInput(path string, inv *runtime.Invocation) error {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return fmt.Errorf("read input: %w", err)
	}
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		var bodies []json.RawMessage
		if err := json.Unmarshal(data, &bodies); err != nil {
			return fmt.Errorf("input %s: %w", path, err)
		}
		for i, b := range bodies {
			inv.Messages = append(inv.Messages, runtime.Message{ID: strconv.Itoa(i + 1), Body: b})
		}
		return nil
	}
	var doc struct {
		Trigger *struct {
			Type   string `json:"type"`
			Source string `json:"source"`
		} `json:"trigger"`
		Messages []struct {
			ID        json.RawMessage `json:"id"`
			Attempt   int             `json:"attempt"`
			CreatedAt time.Time       `json:"created_at"`
			Headers   json.RawMessage `json:"headers"`
			Body      json.RawMessage `json:"body"`
		} `json:"messages"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("input %s: %w (want {\"messages\":[…]} or an array of bodies)", path, err)
	}
	if len(doc.Messages) == 0 {
		return fmt.Errorf("input %s: no messages", path)
	}
	if doc.Trigger != nil {
		inv.Trigger = runtime.Trigger{Type: doc.Trigger.Type, Source: doc.Trigger.Source}
	}
	for i, m := range doc.Messages {
		id := strconv.Itoa(i + 1)
		if len(m.ID) > 0 {
			var s string
			if json.Unmarshal(m.ID, &s) != nil { // a number is fine too
				s = string(m.ID)
			}
			id = s
		}
		inv.Messages = append(inv.Messages, runtime.Message{ID: id, Attempt: m.Attempt, CreatedAt: m.CreatedAt, Headers: m.Headers, Body: m.Body})
	}
	return nil
}

// defaultInvokeCacheDir keeps compiled modules between runs.
func defaultInvokeCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "sluice", "wazero")
}
