// Package wire holds the documents of the Sluice HTTP API
// (docs/http-api.md): the request and response bodies, the error body and
// its codes, as plain Go types with the JSON names the API uses.
//
// Package server encodes its responses and error bodies with these types;
// package client sends its requests with them and decodes the responses
// into them (its public Message, Queue, Key... are aliases of these), so
// that a field renamed on one side is renamed on the other, and the
// golden tests of this package fail when the JSON changes.
//
// A request the server checks field by field (an integer out of range is
// refused naming the field and its range, an explicit 0 is not a missing
// value) is decoded by the server into its own stricter form; its tests
// check that form has the same JSON names as the type here.
//
// Where the API writes a resource one way and takes it another, there are
// two types: Trigger and Hook are what a client puts (fields left zero
// take the server's defaults) and holds, TriggerInfo and HookInfo what the
// server lists, every field written.
//
// Where the API used to write a Go map, the fields stand in sorted order,
// as encoding/json wrote the map's keys, so the bytes have not changed.
//
// The package imports only the standard library: the client pulls in
// neither pgx nor wazero through it. It holds no logic beyond
// NewKey.String.
package wire
