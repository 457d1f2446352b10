// Package client is the Go client of the Sluice HTTP API (docs/http-api.md),
// the one the sluice CLI itself uses.
//
// A Client acts as one access key on one account:
//
//	c, err := client.New("http://127.0.0.1:8080", keyID, secret)
//	// or, from SLUICE_ENDPOINT, SLUICE_KEY=ID:SECRET and SLUICE_ACCOUNT,
//	// falling back on the file `sluice login` writes:
//	c, err := client.FromEnv()
//
// Its fields group the calls: c.MQ is the data plane (Send, SendBatch, SendEntries,
// Receive, Delete, ChangeVisibility, Purge, Peek, ReceiveDLQ, DeleteDLQ,
// PurgeDLQ, Redrive); c.Topics publishes to topics and manages them;
// c.Queues, c.Functions, c.Triggers, c.Invocations,
// c.Keys and c.Hooks manage the account. Every call takes a context first;
// cancel it to abandon a long-poll receive.
//
// # Bodies
//
// Message bodies are JSON. Send takes a json.RawMessage or []byte holding
// JSON as it is, and marshals anything else. Received bodies are
// json.RawMessage: unmarshal them into your own types.
//
// # Types
//
// The API's bodies are the types of package wire, which the server
// encodes too: Message, DeadLetter, Queue, QueueStats, MinuteStats,
// Function, FunctionVersion, Deployment, Trigger, Invocation, Key,
// KeyOptions, NewKey and Hook here are aliases of them, and QueueSettings
// is wire.QueueSettings with a Check method.
//
// # Errors
//
// A refused call returns an *Error with the HTTP status, the API's code
// (e.g. "queue_not_found") and its message. Compare codes with errors.Is
// and the Err* values, or statuses with IsNotFound, IsConflict,
// IsUnauthorized, IsForbidden and IsInvalid:
//
//	_, err := c.MQ.Send(ctx, "orders", order)
//	switch {
//	case errors.Is(err, client.ErrQueueNotFound):
//		// create it
//	case client.IsForbidden(err):
//		// the key lacks mq:send, or the queue is outside its patterns
//	}
//
// Arguments out of range (a batch of 11, a wait of 30 s, a queue name with
// a slash) are refused before anything is sent, as an *Error with Status 0
// and the code the server would have used; the server checks them again.
//
// Network errors are returned wrapped as they are; the client does not
// retry. Sends are not idempotent unless given a dedup key. A 429 (the
// account or the server holds its most of something at once, such as the
// bytes of received messages not yet answered) claimed nothing and may
// be tried again: RetryAfter reports it, with how long the server asked
// to wait.
//
// # Configuration
//
// `sluice login` saves a Config (endpoint, key, account) to ConfigPath,
// readable by the user only; FromEnv and LoadConfig read it with the
// environment variables overriding each field. WriteConfig and ReadConfig
// let other tools share that file.
//
// # Testing
//
// Package clienttest starts a real server on a fresh schema of the
// Postgres at TEST_DATABASE_URL and hands out clients with keys of any
// scope, for tests of code that uses this package.
package client
