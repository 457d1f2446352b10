package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// runHealth probes a server's /readyz: exit 0 when it answers 200 (the
// server runs and reaches its database), 1 otherwise. It needs no key and
// no config, so that it can be a container's healthcheck.
func runHealth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("health", stderr)
	addr := fs.String("addr", envOr("SLUICE_HEALTH_ADDR", "http://127.0.0.1:8080"), "the server's base URL or host:port [SLUICE_HEALTH_ADDR]")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected argument %q: sluice health [--addr http://127.0.0.1:8080]", fs.Arg(0))
	}
	base := strings.TrimRight(*addr, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	if err != nil {
		return usageErrorf("--addr %q: %v", *addr, err)
	}
	req.Header.Set("User-Agent", "sluice-cli/"+version)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s/readyz: not reachable: %w", base, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s/readyz: %s: %s", base, resp.Status, strings.TrimSpace(string(body)))
	}
	_, err = fmt.Fprintf(stdout, "%s: ready\n", base)
	return err
}
