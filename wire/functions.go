package wire

import "time"

// Function is a function with its latest version and aliases.
type Function struct {
	Name          string `json:"name"`
	LatestVersion int    `json:"latest_version"`
	// Aliases maps alias names (e.g. "live") to version numbers.
	Aliases map[string]int `json:"aliases"`
	// RollbackTo maps each alias that has moved to the version a
	// rollback would move it back to.
	RollbackTo map[string]int `json:"rollback_to"`
	CreatedAt  time.Time      `json:"created_at"`
	// Versions is filled on a get of one function, oldest first.
	Versions []FunctionVersion `json:"versions,omitempty"`
}

// FunctionVersion is one immutable version of a function.
type FunctionVersion struct {
	Version   int    `json:"version"`
	SHA256    string `json:"sha256"`
	SizeBytes int    `json:"size_bytes"`
	MemoryMB  int    `json:"memory_mb"`
	TimeoutMS int64  `json:"timeout_ms"`
	// Env holds the version's environment, values masked.
	Env map[string]string `json:"env"`
	// Emits are the patterns of the queues and topics the version may
	// emit to (Function ABI v1.1).
	Emits     []string  `json:"emits,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// FunctionList answers a list of functions.
type FunctionList struct {
	Functions []Function `json:"functions"`
	// Next, when set, is the after of the next page; absent on the last page.
	Next string `json:"next,omitempty"`
}

// Deployment answers a deploy: what it did, or, while the module is
// still compiling, where to ask (ID, at GET .../functions/{name}/deployments/{id}).
type Deployment struct {
	AliasMoved bool `json:"alias_moved"`
	// Created is false when module and config equal the latest version's,
	// which is then reused.
	Created bool   `json:"created"`
	SHA256  string `json:"sha256"`
	Version int    `json:"version"`
	// Status is DeployCompiling, DeployReady, DeployFailed or
	// DeployDryRun ("" from a server older than the status).
	Status string `json:"status,omitempty"`
	// ID names the deploy while it runs (a 202 answer and its status).
	ID string `json:"id,omitempty"`
	// Error says why a failed deploy was refused: what the synchronous
	// answer's error body would have said.
	Error *ErrorBody `json:"error,omitempty"`
}

// Statuses of a deploy.
const (
	DeployCompiling = "compiling" // the server is compiling (validating) the module
	DeployReady     = "ready"     // the version is stored and the alias moved
	DeployFailed    = "failed"    // refused: see Error; nothing was stored
	// DeployDryRun answers a deploy with dry_run=true: what it would do
	// (version, created, alias_moved); nothing was stored or compiled.
	DeployDryRun = "dry_run"
)

// SetAliasRequest is the body of an alias change.
type SetAliasRequest struct {
	Version int `json:"version"`
}

// RollbackRequest is the body of a rollback ("": the alias live).
type RollbackRequest struct {
	Alias string `json:"alias"`
}

// RollbackResult answers a rollback: the version the alias now points at.
type RollbackResult struct {
	Version int `json:"version"`
}
