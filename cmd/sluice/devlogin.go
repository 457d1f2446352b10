package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/server"
)

// devLogin makes the CLI work at once against a `sluice dev` server: it
// creates an access key with every scope and saves it with the server's
// endpoint to the CLI config, unless that config already holds a working
// key for this endpoint. A config pointing at another, non-local server
// is left alone; the key is printed as environment variables instead.
func devLogin(ctx context.Context, srv *server.Server, account, self string, w io.Writer) error {
	addr := srv.Addr()
	if addr == "" {
		return nil // no HTTP API
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	path, err := client.ConfigPath()
	if err != nil {
		return err
	}
	return saveDevLogin(ctx, srv, account, "http://"+net.JoinHostPort(host, port), path, self, w)
}

// saveDevLogin is devLogin for the API at endpoint and the config file at
// path.
func saveDevLogin(ctx context.Context, srv *server.Server, account, endpoint, path, self string, w io.Writer) error {
	old, exists, err := client.ReadConfig(path)
	if err != nil {
		return err
	}
	if exists && old.Endpoint == endpoint {
		if c, err := old.Client(); err == nil {
			if _, err := c.Queues.List(ctx); err == nil {
				fmt.Fprintf(w, "CLI logged in (%s), e.g.: %s queues list --live\n", path, self)
				return nil
			}
		}
	}
	id, secret, err := srv.CreateKey(ctx, account, []string{"mq:*", "functions:deploy", "kv:*"}, nil, "sluice dev")
	if err != nil {
		return err
	}
	cfg := client.Config{Endpoint: endpoint, Key: id + ":" + secret, Account: account}
	if exists && !isLocal(old.Endpoint) {
		fmt.Fprintf(w, "Your CLI config %s points at %s; left as it is. For this server:\n", path, old.Endpoint)
		fmt.Fprintf(w, "  export SLUICE_ENDPOINT=%s SLUICE_KEY=%s\n", cfg.Endpoint, cfg.Key)
		return nil
	}
	if err := client.WriteConfig(path, cfg); err != nil {
		return err
	}
	fmt.Fprintf(w, "CLI logged in with a new key %s (%s), e.g.: %s queues list --live\n", id, path, self)
	return nil
}

// isLocal reports whether endpoint is on this machine (a config `sluice
// dev` may replace).
func isLocal(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	if u.Hostname() == "localhost" {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}
