package server

import (
	"encoding/base64"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/kv"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/wire"
)

// Key-value store routes (docs/http-api.md): values travel as raw bytes
// on PUT and as JSON entries on GET.

func toKVEntry(store string, e kv.Entry) wire.KVEntry {
	out := wire.KVEntry{Store: store, KeyBase64: base64.StdEncoding.EncodeToString(e.Key),
		ValueBase64: base64.StdEncoding.EncodeToString(e.Value), SizeBytes: len(e.Value), UpdatedAt: e.UpdatedAt.UTC()}
	if utf8.Valid(e.Key) {
		out.Key = string(e.Key)
	}
	if utf8.Valid(e.Value) {
		v := string(e.Value)
		out.Value = &v
	}
	if !e.ExpiresAt.IsZero() {
		t := e.ExpiresAt.UTC()
		out.ExpiresAt = &t
	}
	return out
}

func checkStore(store string) error {
	if !pgqueue.ValidName(store) {
		return errorf(http.StatusBadRequest, "invalid_name", "store name %q: use 1-80 characters from A-Z a-z 0-9 _ -", truncate(store, 90))
	}
	return nil
}

func (a *api) kvNotFound(c *call, store, key string) error {
	return errorf(http.StatusNotFound, "not_found", "key %q not found in store %s of account %s", truncate(key, 90), store, c.account)
}

func (a *api) kvGet(w http.ResponseWriter, r *http.Request, c *call) error {
	store, key := r.PathValue("store"), r.PathValue("key")
	if err := checkStore(store); err != nil {
		return err
	}
	v, found, err := a.s.kv.Get(r.Context(), c.account, store, []byte(key))
	if err != nil {
		return err
	}
	if !found {
		return a.kvNotFound(c, store, key)
	}
	// One more read for the metadata would race; the listing has it.
	es, err := a.s.kv.List(r.Context(), c.account, store, []byte(key), nil, 1)
	if err != nil {
		return err
	}
	e := kv.Entry{Key: []byte(key), Value: v}
	if len(es) == 1 && string(es[0].Key) == key {
		e = es[0]
	}
	writeJSON(w, http.StatusOK, toKVEntry(store, e))
	return nil
}

func (a *api) kvPut(w http.ResponseWriter, r *http.Request, c *call) error {
	store, key := r.PathValue("store"), r.PathValue("key")
	if err := checkStore(store); err != nil {
		return err
	}
	ttl, err := queryInt(r, "ttl_seconds", 0, int64(kv.MaxTTL/time.Second), 0)
	if err != nil {
		return err
	}
	value, err := readBody(w, r, "application/octet-stream", kv.MaxValueBytes, true)
	if err != nil {
		return err
	}
	if err := a.s.kv.Set(r.Context(), c.account, store, []byte(key), value, time.Duration(ttl)*time.Second); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) kvDelete(w http.ResponseWriter, r *http.Request, c *call) error {
	store, key := r.PathValue("store"), r.PathValue("key")
	if err := checkStore(store); err != nil {
		return err
	}
	ok, err := a.s.kv.Delete(r.Context(), c.account, store, []byte(key))
	if err != nil {
		return err
	}
	if !ok {
		return a.kvNotFound(c, store, key)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) kvList(w http.ResponseWriter, r *http.Request, c *call) error {
	store := r.PathValue("store")
	if err := checkStore(store); err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 1, kv.MaxList, 100)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	after := []byte(q.Get("after"))
	if b64, ok := q["after_base64"]; ok {
		if _, both := q["after"]; both {
			return badRequest("give after or after_base64, not both")
		}
		if after, err = base64.StdEncoding.DecodeString(b64[0]); err != nil {
			return badRequest("invalid after_base64 %q: use the next_base64 of the previous page (standard base64)", truncate(b64[0], 90))
		}
	}
	es, err := a.s.kv.List(r.Context(), c.account, store, []byte(q.Get("prefix")), after, int(limit))
	if err != nil {
		return err
	}
	out := wire.KVList{Entries: make([]wire.KVEntry, len(es))}
	for i, e := range es {
		out.Entries[i] = toKVEntry(store, e)
	}
	if len(es) == int(limit) {
		last := es[len(es)-1].Key
		out.NextBase64 = base64.StdEncoding.EncodeToString(last)
		if utf8.Valid(last) {
			out.Next = string(last)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
