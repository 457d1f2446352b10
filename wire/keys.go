package wire

import "time"

// Key is an access key as listed: never its secret.
type Key struct {
	ID          string    `json:"id"`
	Account     string    `json:"account"`
	Scopes      []string  `json:"scopes"`
	Queues      []string  `json:"queues"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
	// RevokedAt is when it was revoked, nil while it is valid.
	RevokedAt *time.Time `json:"revoked_at"`
}

// KeyList answers a list of keys.
type KeyList struct {
	Keys []Key `json:"keys"`
	// Next, when set, is the after of the next page; absent on the last page.
	Next string `json:"next,omitempty"`
}

// CreateKeyRequest is the body of a key's creation.
type CreateKeyRequest struct {
	// Scopes it grants, e.g. "mq:send", "mq:*", "functions:deploy".
	Scopes []string `json:"scopes"`
	// Queues limits its data-plane calls to queue-name patterns
	// (path.Match syntax, e.g. "orders-*"; nil: every queue).
	Queues      []string `json:"queues,omitempty"`
	Description string   `json:"description"`
}

// NewKey answers a key's creation: the key with its secret, which is
// shown only once.
type NewKey struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
}

// String is the key as SLUICE_KEY and `sluice login --key` take it.
func (k NewKey) String() string { return k.ID + ":" + k.Secret }
