package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/wire"
)

// FunctionsService manages the functions of the client's account (scope
// functions:deploy to change them).
type FunctionsService struct{ c *Client }

// Function is a function with its latest version and aliases; Get fills
// its Versions, oldest first.
type Function = wire.Function

// FunctionVersion is one immutable version of a function; its Env holds
// the version's environment, values masked.
type FunctionVersion = wire.FunctionVersion

// DeployOptions tune a deploy. Zero values take the server's defaults.
type DeployOptions struct {
	// MemoryMB caps the instance's memory (1 to 4096; 0: 64).
	MemoryMB int
	// TimeoutMS caps one invocation (1 to 900000; 0: 30000).
	TimeoutMS int
	// Alias is moved to the deployed version (e.g. "live").
	Alias string
	// Env is the function's environment.
	Env map[string]string
	// Progress, when set, is called with each new status of the deploy
	// the server reports: "compiling" once while it compiles the module
	// (after the upload), then "ready" or "failed".
	Progress func(status string)
	// DryRun asks what the deploy would do (the version, whether it
	// would be created, whether the alias would move; status "dry_run")
	// and stores and compiles nothing.
	DryRun bool
	// Emits are the patterns of the queues and topics the version may
	// emit to (Function ABI v1.1; none by default).
	Emits []string
	// AllowedOutboundHosts are the URLs the function may call over HTTP
	// (e.g. "https://api.example.com", "http://127.0.0.1:*"); none when
	// empty.
	AllowedOutboundHosts []string
	// Stores are the key-value stores of the account the function may open.
	Stores []string
}

// deployPoll is the first and the longest wait between two status
// requests of a deploy still compiling.
const (
	deployPollFirst = 100 * time.Millisecond
	deployPollMax   = time.Second
)

// Deployment tells what a deploy did. Created is false when module and
// config equal the latest version's, which is then reused.
type Deployment = wire.Deployment

// List returns the account's functions by name.
func (s *FunctionsService) List(ctx context.Context) ([]Function, error) {
	return listOf[Function](ctx, s.c, request{method: http.MethodGet, path: s.c.managePath("functions")}, "functions")
}

// Get returns function name with its versions and aliases.
func (s *FunctionsService) Get(ctx context.Context, name string) (Function, error) {
	var out Function
	if err := checkName("function", name); err != nil {
		return out, err
	}
	err := s.c.do(ctx, request{method: http.MethodGet, path: s.c.managePath("functions", name)}, &out)
	if out.Name == "" {
		out.Name = name
	}
	return out, err
}

// Deploy uploads module (a WASI WebAssembly binary) as a new version of
// function name, unless it and o equal the latest version's.
func (s *FunctionsService) Deploy(ctx context.Context, name string, module []byte, o DeployOptions) (Deployment, error) {
	var out Deployment
	if err := checkName("function", name); err != nil {
		return out, err
	}
	if len(module) == 0 {
		return out, invalidf("function %s: empty module", name)
	}
	if o.MemoryMB != 0 {
		if err := checkRange("memory_mb", o.MemoryMB, 1, 4096); err != nil {
			return out, err
		}
	}
	if o.TimeoutMS != 0 {
		if err := checkRange("timeout_ms", o.TimeoutMS, 1, 900000); err != nil {
			return out, err
		}
	}
	q := url.Values{}
	if o.MemoryMB > 0 {
		q.Set("memory_mb", strconv.Itoa(o.MemoryMB))
	}
	if o.TimeoutMS > 0 {
		q.Set("timeout_ms", strconv.Itoa(o.TimeoutMS))
	}
	if o.Alias != "" {
		if err := checkName("alias", o.Alias); err != nil {
			return out, err
		}
		q.Set("alias", o.Alias)
	}
	keys := make([]string, 0, len(o.Env))
	for k := range o.Env {
		if k == "" || strings.Contains(k, "=") {
			return out, invalidf("function %s: env name %q: must be non-empty without '='", name, k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		q.Add("env", k+"="+o.Env[k])
	}
	for _, p := range o.Emits {
		q.Add("emits", p)
	}
	for _, h := range o.AllowedOutboundHosts {
		q.Add("allowed_outbound_host", h)
	}
	for _, st := range o.Stores {
		if err := checkName("store", st); err != nil {
			return out, err
		}
		q.Add("store", st)
	}
	if o.DryRun {
		q.Set("dry_run", "true")
	}
	err := s.c.do(ctx, request{method: http.MethodPost, path: s.c.managePath("functions", name, "versions"), query: q,
		raw: module, contentType: "application/wasm"}, &out)
	if err != nil {
		return out, err
	}
	// A server that has not finished compiling answers 202 with status
	// compiling; ask until it is ready or failed.
	wait := deployPollFirst
	if out.Status == wire.DeployCompiling && o.Progress != nil {
		o.Progress(out.Status)
	}
	for out.Status == wire.DeployCompiling {
		select {
		case <-ctx.Done():
			return out, fmt.Errorf("client: deploy %s: still compiling (deploy %s): %w", name, out.ID, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, deployPollMax)
		if out, err = s.DeployStatus(ctx, name, out.ID); err != nil {
			return out, err
		}
	}
	if o.Progress != nil && out.Status != "" {
		o.Progress(out.Status)
	}
	if out.Status == wire.DeployFailed && out.Error != nil {
		return out, &Error{Status: http.StatusBadRequest, Code: out.Error.Code, Message: out.Error.Message}
	}
	return out, nil
}

// DeployStatus returns the status of deploy id of function name, as the
// server that accepted it reports it (Deploy waits for it itself).
func (s *FunctionsService) DeployStatus(ctx context.Context, name, id string) (Deployment, error) {
	var out Deployment
	err := s.c.do(ctx, request{method: http.MethodGet, path: s.c.managePath("functions", name, "deployments", id)}, &out)
	return out, err
}

// SetAlias points alias of function name at version.
func (s *FunctionsService) SetAlias(ctx context.Context, name, alias string, version int) error {
	if err := checkName("function", name); err != nil {
		return err
	}
	if err := checkName("alias", alias); err != nil {
		return err
	}
	if version < 1 {
		return invalidf("version %d: must be positive", version)
	}
	return s.c.do(ctx, request{method: http.MethodPut, path: s.c.managePath("functions", name, "aliases", alias),
		body: wire.SetAliasRequest{Version: version}}, nil)
}

// Rollback points alias of function name back at the version it pointed
// at before, and returns that version.
func (s *FunctionsService) Rollback(ctx context.Context, name, alias string) (int, error) {
	if err := checkName("function", name); err != nil {
		return 0, err
	}
	if err := checkName("alias", alias); err != nil {
		return 0, err
	}
	var out wire.RollbackResult
	err := s.c.do(ctx, request{method: http.MethodPost, path: s.c.managePath("functions", name, "rollback"),
		body: wire.RollbackRequest{Alias: alias}}, &out)
	return out.Version, err
}

// Delete deletes function name with all its versions and aliases (scope
// functions:deploy).
func (s *FunctionsService) Delete(ctx context.Context, name string) error {
	if err := checkName("function", name); err != nil {
		return err
	}
	return s.c.do(ctx, request{method: http.MethodDelete, path: s.c.managePath("functions", name)}, nil)
}
