package wire

import "time"

// Hook turns signed webhook deliveries to POST /hooks/{account}/{name}
// into messages of Queue. A client sends its CreateHookRequest fields and
// holds what a listing (HookInfo, with the same JSON names) says of it.
type Hook struct {
	Name  string `json:"name"`
	Queue string `json:"queue"`
	// Verify is the signature scheme: standard, github, stripe or none.
	Verify string `json:"verify"`
	// Secrets verify signatures (several during a rotation). Only sent:
	// listing never returns them, only SecretCount.
	Secrets     []string `json:"secrets,omitempty"`
	SecretCount int      `json:"secret_count,omitempty"`
	// Source is who owns it: "api" (the default) or "manifest".
	Source    string    `json:"source,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// CreateHookRequest is the body of a hook's creation or replacement.
type CreateHookRequest struct {
	// Name is 1-80 characters from A-Z a-z 0-9 _ -.
	Name string `json:"name"`
	// Queue is where deliveries go; it must exist.
	Queue string `json:"queue"`
	// Verify is the signature scheme: standard, github, stripe or none.
	Verify string `json:"verify"`
	// Secrets are the signing secrets (several while rotating); none for
	// scheme none.
	Secrets []string `json:"secrets,omitempty"`
	// Source is who owns the hook: "api" (the default) or "manifest".
	Source string `json:"source,omitempty"`
}

// CreateHookResult answers a hook's creation (201) or replacement (200).
type CreateHookResult struct {
	Created     bool   `json:"created"`
	Name        string `json:"name"`
	Queue       string `json:"queue"`
	SecretCount int    `json:"secret_count"`
	Verify      string `json:"verify"`
}

// HookInfo is a hook as listed: never its secrets.
type HookInfo struct {
	Name        string    `json:"name"`
	Queue       string    `json:"queue"`
	Verify      string    `json:"verify"`
	SecretCount int       `json:"secret_count"`
	Source      string    `json:"source"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// HookList answers a list of hooks.
type HookList struct {
	Hooks []HookInfo `json:"hooks"`
	// Next, when set, is the after of the next page; absent on the last page.
	Next string `json:"next,omitempty"`
}

// WebhookResult answers a webhook delivery: 202 with the sequence of the
// message it became, or 200 with Duplicate set and the first delivery's
// sequence when its delivery id was seen before.
type WebhookResult struct {
	Duplicate bool  `json:"duplicate,omitempty"`
	Sequence  int64 `json:"sequence"`
}
