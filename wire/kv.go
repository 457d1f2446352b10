package wire

import "time"

// KVEntry is one live key of a key-value store. Key and Value are set when
// they are valid UTF-8; KeyBase64 and ValueBase64 always hold the bytes.
type KVEntry struct {
	Store       string     `json:"store"`
	Key         string     `json:"key,omitempty"`
	KeyBase64   string     `json:"key_base64"`
	Value       *string    `json:"value,omitempty"`
	ValueBase64 string     `json:"value_base64"`
	SizeBytes   int        `json:"size_bytes"`
	ExpiresAt   *time.Time `json:"expires_at"`
	UpdatedAt   time.Time  `json:"updated_at,omitzero"`
}

// KVList answers a listing of a store. When the page is full, NextBase64
// holds the bytes of its last key, the after_base64= value of the next
// page, and Next the same key as text (the after= value) when it is valid
// UTF-8.
type KVList struct {
	Entries    []KVEntry `json:"entries"`
	Next       string    `json:"next,omitempty"`
	NextBase64 string    `json:"next_base64,omitempty"`
}
