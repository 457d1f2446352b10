package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/client/clienttest"
)

func TestDevLogin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := clienttest.NewShared(t)
	path := filepath.Join(t.TempDir(), "sluice", "config.json")
	var out bytes.Buffer
	if err := saveDevLogin(ctx, srv.Server, client.DefaultAccount, srv.URL, path, "sluice", &out); err != nil {
		t.Fatal(err)
	}
	cfg, ok, err := client.ReadConfig(path)
	if err != nil || !ok || cfg.Endpoint != srv.URL {
		t.Fatalf("config %+v %v %v", cfg, ok, err)
	}
	c, err := cfg.Client()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := c.Keys.List(ctx)
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys after the first login: %+v %v", keys, err)
	}
	// Again: the saved key works, so no new key.
	out.Reset()
	if err := saveDevLogin(ctx, srv.Server, client.DefaultAccount, srv.URL, path, "sluice", &out); err != nil {
		t.Fatal(err)
	}
	if keys, _ := c.Keys.List(ctx); len(keys) != 1 || !strings.Contains(out.String(), "CLI logged in") {
		t.Errorf("second login: %d keys, %q", len(keys), out.String())
	}
	// A config for a remote server is left alone.
	remote := client.Config{Endpoint: "https://sluice.example.com", Key: "a:b"}
	if err := client.WriteConfig(path, remote); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := saveDevLogin(ctx, srv.Server, client.DefaultAccount, srv.URL, path, "sluice", &out); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := client.ReadConfig(path); got != remote || !strings.Contains(out.String(), "export SLUICE_ENDPOINT="+srv.URL) {
		t.Errorf("remote config: now %+v, printed %q", got, out.String())
	}
}
