package client

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/wire"
)

// KVService reads and writes the account's key-value stores (the stores
// functions open through the kv_* host imports). Reading needs scope
// kv:read, writing kv:write (kv:* grants both).
type KVService struct{ c *Client }

// KVEntry is one live key of a store.
type KVEntry = wire.KVEntry

// KVList is one page of a store's listing.
type KVList = wire.KVList

func (s *KVService) keyPath(store, key string) ([]string, error) {
	if err := checkName("store", store); err != nil {
		return nil, err
	}
	if key == "" {
		return nil, invalidf("store %s: empty key", store)
	}
	return s.c.managePath("kv", store, "keys", key), nil
}

// Get returns key of store; a missing key is an error IsNotFound reports.
func (s *KVService) Get(ctx context.Context, store, key string) (KVEntry, error) {
	var out KVEntry
	p, err := s.keyPath(store, key)
	if err != nil {
		return out, err
	}
	err = s.c.do(ctx, request{method: http.MethodGet, path: p}, &out)
	return out, err
}

// Set stores value at key of store, expiring after ttl (0: never; whole
// seconds).
func (s *KVService) Set(ctx context.Context, store, key string, value []byte, ttl time.Duration) error {
	p, err := s.keyPath(store, key)
	if err != nil {
		return err
	}
	q := url.Values{}
	if ttl > 0 {
		q.Set("ttl_seconds", strconv.FormatInt(int64((ttl+time.Second-1)/time.Second), 10))
	}
	if value == nil {
		value = []byte{}
	}
	return s.c.do(ctx, request{method: http.MethodPut, path: p, query: q, raw: value, contentType: "application/octet-stream"}, nil)
}

// Delete removes key of store; a missing key is an error IsNotFound
// reports.
func (s *KVService) Delete(ctx context.Context, store, key string) error {
	p, err := s.keyPath(store, key)
	if err != nil {
		return err
	}
	return s.c.do(ctx, request{method: http.MethodDelete, path: p}, nil)
}

// List returns up to limit (0: 100) live keys of store starting with
// prefix and sorting after after; KVList.Next is the after of the next
// page (set from NextBase64 when the key is not UTF-8: a Go string holds
// the key's bytes as they are).
func (s *KVService) List(ctx context.Context, store, prefix, after string, limit int) (KVList, error) {
	var out KVList
	if err := checkName("store", store); err != nil {
		return out, err
	}
	q := url.Values{}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if err := s.c.do(ctx, request{method: http.MethodGet, path: s.c.managePath("kv", store), query: q}, &out); err != nil {
		return out, err
	}
	if out.Next == "" && out.NextBase64 != "" {
		next, err := base64.StdEncoding.DecodeString(out.NextBase64)
		if err != nil {
			return out, fmt.Errorf("list store %s: the server's next_base64 %q: %w", store, out.NextBase64, err)
		}
		out.Next = string(next)
	}
	return out, nil
}
