// Package kv owns the key-value stores that functions use through the
// kv_* host imports of Function ABI v1.1 (see docs/function-abi.md): per
// account, named stores (1-80 characters of A-Z a-z 0-9 _ -) of byte keys
// (1 to 1024 bytes) and values (up to MaxValueBytes), each with an optional
// expiry. A function may open only the stores its manifest lists under
// stores; operators and the CLI reach every store of their account through
// the HTTP API.
//
// Everything lives in Postgres, in table kv_entries of the Sluice schema;
// the view kv shows the live entries, keys and values also as text:
//
//	SELECT store, key_text, value_text, expires_at FROM sluice.kv WHERE store = 'sessions';
//
// An expired entry reads as absent at once; Sweep deletes them (the server
// calls it every few seconds). Increment keeps a decimal integer as the
// value, so counters read back as text ("42"). Every call is one
// statement: Increment and CompareAndSet are atomic under concurrency.
//
// Table kv_usage counts what each account's stores hold (a trigger on
// kv_entries keeps it); Stores.WithQuota refuses, with ErrQuota, a write
// that would take an account past its Quota of entries and bytes, and
// Usage reads the count.
//
//	store, err := kv.New(pool, "sluice")
//	err = store.Set(ctx, account, "sessions", []byte("u1"), []byte("token"), time.Hour)
//	n, err := store.Increment(ctx, account, "counts", []byte("visits"), 1)
package kv
