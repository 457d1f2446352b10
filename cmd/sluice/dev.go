package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/cmd/sluice/internal/deploycmd"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/internal/localpg"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/triggers/webhook"
)

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dev", stderr)
	var f serveFlags
	f.register(fs, "127.0.0.1:8080", "console")
	file := fs.String("f", "", "app manifest (default: the examples' examples/sluice.yaml)")
	pgDir := fs.String("postgres-dir", defaultPostgresDir, "private Postgres folder when DATABASE_URL is unset")
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger, err := f.logger(stderr)
	if err != nil {
		return err
	}
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		c, err := localpg.Start(ctx, *pgDir, localpg.Options{Durable: true})
		if err != nil {
			return err
		}
		defer func() {
			if err := c.Stop(context.Background()); err != nil {
				logger.Warn().Err(err).Msg("stopping the local Postgres failed")
			}
		}()
		url = c.URL()
		logger.Info().Str("url", url).Msg("local Postgres running (DATABASE_URL unset)")
	}
	path := *file
	if path == "" {
		root, err := wasmbuild.Root()
		if err != nil {
			return fmt.Errorf("find the examples: %w (pass -f sluice.yaml)", err)
		}
		path = filepath.Join(root, "examples", "sluice.yaml")
	}
	m, err := manifest.ReadFile(path)
	if err != nil {
		return err
	}
	cfg := f.config(url, logger)
	cfg.Migrate = true
	return serve(ctx, cfg, func(ctx context.Context, srv *server.Server) error {
		logger.Info().Str("manifest", path).Msg("deploying (building the example functions the first time takes a moment)")
		if err := applyManifest(ctx, srv, pgqueue.DefaultAccount, m, stdout); err != nil {
			return err
		}
		if _, ok := m.Queues["hello"]; ok {
			body, _ := json.Marshal(map[string]string{"greeting": "hello from sluice dev"})
			if _, err := srv.Queue().Send(ctx, pgqueue.DefaultAccount, "hello", pgqueue.NewMessage{Body: body}); err != nil {
				return err
			}
		}
		if _, ok := m.Queues["webhooks"]; ok {
			if err := sendSampleWebhooks(ctx, srv.Queue()); err != nil {
				return err
			}
		}
		fmt.Fprintf(stdout, "\nSluice is running on %s (schema %s). Try:\n", url, cfg.Schema)
		fmt.Fprintf(stdout, "  psql '%s' -c \"SELECT sluice.send('hello', '{\\\"n\\\": 1}')\"\n", url)
		fmt.Fprintf(stdout, "  psql '%s' -c 'SELECT * FROM sluice.queue_stats'\n", url)
		if a := srv.Addr(); a != "" {
			fmt.Fprintf(stdout, "  curl http://%s/healthz\n", a)
		}
		if err := devLogin(ctx, srv, pgqueue.DefaultAccount, stdout); err != nil {
			logger.Warn().Err(err).Msg("logging the CLI in failed")
		}
		fmt.Fprintln(stdout, "Ctrl-C stops it.")
		return nil
	})
}

// sendSampleWebhooks enqueues a GitHub push and a Stripe invoice.paid
// delivery to the webhooks queue, as the webhook endpoint would have
// stored them, for the examples' webhook-router to route (with emit).
func sendSampleWebhooks(ctx context.Context, q *pgqueue.Client) error {
	samples := []webhook.Envelope{
		{Hook: "github", DeliveryID: "dev-github-1", Method: "POST", Path: "/hooks/default/github",
			Headers: map[string]string{"content-type": "application/json", "user-agent": "GitHub-Hookshot/dev",
				"x-github-delivery": "dev-github-1", "x-github-event": "push"},
			Body: json.RawMessage(`{"ref":"refs/heads/main","repository":{"full_name":"acme/shop"},"head_commit":{"id":"4bf92f35","message":"sluice dev"}}`)},
		{Hook: "stripe", DeliveryID: "evt_dev_1", Method: "POST", Path: "/hooks/default/stripe",
			Headers: map[string]string{"content-type": "application/json; charset=utf-8", "user-agent": "Stripe/1.0"},
			Body:    json.RawMessage(`{"id":"evt_dev_1","object":"event","type":"invoice.paid","data":{"object":{"id":"in_dev_1","amount_paid":4200,"currency":"eur"}}}`)},
	}
	for _, e := range samples {
		body, err := e.MarshalJSON()
		if err != nil {
			return err
		}
		if _, err := q.Send(ctx, pgqueue.DefaultAccount, "webhooks", pgqueue.NewMessage{Body: body}); err != nil {
			return err
		}
	}
	return nil
}

// applyManifest applies m to account of the running dev server and prints
// what changed.
func applyManifest(ctx context.Context, srv *server.Server, account string, m *manifest.Manifest, w io.Writer) error {
	changes, err := srv.Apply(ctx, account, m, deploycmd.Modules(m))
	return deploycmd.PrintChanges(w, changes, err)
}
