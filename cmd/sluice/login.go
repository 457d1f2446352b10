package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sluicehq/sluice/client"
)

func runLogin(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("login", "--endpoint URL --key ID:SECRET [--account N] [--no-check]")
	key := f.String("key", "", "access key as ID:SECRET (default: SLUICE_KEY)")
	noCheck := f.Bool("no-check", false, "save without checking the key against the API")
	if _, err := f.parse(args, stdout); err != nil {
		return err
	}
	if f.endpoint == "" {
		f.endpoint = os.Getenv(client.EnvEndpoint)
	}
	if f.endpoint == "" {
		return usageErrorf("missing --endpoint URL, e.g. http://127.0.0.1:8080")
	}
	if *key == "" {
		*key = os.Getenv(client.EnvKey)
	}
	if *key == "" {
		return usageErrorf("missing --key ID:SECRET (create one with `sluice keys create`, or run `sluice dev`, which logs in)")
	}
	cfg := client.Config{Endpoint: strings.TrimRight(f.endpoint, "/"), Key: *key, Account: f.account}
	c, err := cfg.Client(client.WithUserAgent("sluice-cli/" + version))
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if !*noCheck {
		// Any authenticated call tells a good key from a bad one; a key
		// without mq:receive gets 403 here, which still proves it valid.
		_, err := c.Queues.List(ctx)
		if err != nil && !client.IsForbidden(err) {
			if client.IsUnauthorized(err) {
				return fmt.Errorf("the API at %s refused the key: %w", cfg.Endpoint, err)
			}
			return fmt.Errorf("check the key against %s: %w (pass --no-check to save it anyway)", cfg.Endpoint, err)
		}
	}
	path := f.config
	if path == "" {
		if path, err = client.ConfigPath(); err != nil {
			return err
		}
	}
	if err := client.WriteConfig(path, cfg); err != nil {
		return err
	}
	id, _, _ := strings.Cut(cfg.Key, ":")
	return done(f, stdout, map[string]any{"endpoint": cfg.Endpoint, "key_id": id, "account": c.Account(), "config": path},
		"logged in to %s as key %s (account %s); saved to %s", cfg.Endpoint, id, c.Account(), path)
}
