package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/cmd/sluice/internal/deploycmd"
	"github.com/sluicehq/sluice/deploy"
)

// deployViaAPI is `sluice deploy` without DATABASE_URL: it applies the
// manifest file through the HTTP API as the logged-in key (which needs
// mq:admin and functions:deploy). account overrides the login's when set.
func deployViaAPI(ctx context.Context, file, config, account string, opts deploy.Options, w io.Writer) error {
	cfg, err := client.LoadConfig(config)
	if err != nil {
		return err
	}
	if cfg.Endpoint == "" || cfg.Key == "" {
		return usageErrorf("DATABASE_URL is not set and the CLI is not logged in: set DATABASE_URL to deploy to the database, or run `sluice login` to deploy through the API")
	}
	if account != "" {
		cfg.Account = account
	}
	c, err := cfg.Client(client.WithUserAgent("sluice-cli/" + version))
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return deploycmd.ThroughAPI(ctx, c, file, opts, w)
}

// flagIfSet returns the value of flag name when it was given, else "".
func flagIfSet(fs *flag.FlagSet, name string) string {
	v := ""
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			v = f.Value.String()
		}
	})
	return v
}
