package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/cmd/sluice/internal/deploycmd"
	"github.com/sluicehq/sluice/deploy"
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
	f.register(fs, "127.0.0.1:8080", "console", false)
	file := fs.String("f", "", "app manifest (default: ./sluice.yaml when there is one, else the bundled examples)")
	pgDir := fs.String("postgres-dir", defaultPostgresDir, "private Postgres folder when DATABASE_URL is unset (also holds the lock that keeps a second sluice dev out)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected argument %q: sluice dev [-f sluice.yaml] [--addr 127.0.0.1:8080]", fs.Arg(0))
	}
	if err := f.check(); err != nil {
		return err
	}
	logger, err := f.logger(stderr)
	if err != nil {
		return err
	}
	// One dev server per folder: a second one would fail to bind, or run
	// the same triggers twice against the same database.
	holder := fmt.Sprintf("sluice dev (pid %d)", os.Getpid())
	lock, err := localpg.Lock(*pgDir, holder)
	if errors.Is(err, localpg.ErrLocked) {
		return fmt.Errorf("%w: stop that one first (Ctrl-C in its terminal), or run this one with --postgres-dir OTHER-FOLDER", err)
	}
	if err != nil {
		return err
	}
	defer lock.Release()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		c, err := localpg.Start(ctx, *pgDir, localpg.Options{Durable: true})
		if err != nil {
			return err
		}
		if c.Started() {
			defer func() {
				if err := c.Stop(context.Background()); err != nil {
					logger.Warn().Err(err).Msg("stopping the local Postgres failed")
				}
			}()
		} else {
			logger.Info().Str("folder", *pgDir).Msg("local Postgres was already running (sluice postgres start?); it is left running at exit")
		}
		url = c.URL()
		logger.Info().Str("url", url).Msg("local Postgres running (DATABASE_URL unset)")
	}
	path, examples := *file, false
	if path == "" {
		if _, err := os.Stat("sluice.yaml"); err == nil {
			path = "sluice.yaml"
		} else {
			root, err := wasmbuild.Root()
			if err != nil {
				return usageErrorf("no sluice.yaml here and no bundled examples (%v): pass -f sluice.yaml", err)
			}
			path, examples = filepath.Join(root, "examples", "sluice.yaml"), true
		}
	}
	m, err := manifest.ReadFile(path)
	if err != nil {
		return err
	}
	cfg := f.config(url, logger)
	cfg.Migrate = true
	self := selfCommand()
	return serve(ctx, cfg, func(ctx context.Context, srv *server.Server) error {
		msg := "deploying " + path
		if examples {
			msg = "deploying the bundled examples (no sluice.yaml here; building the example functions the first time takes a moment)"
		}
		logger.Info().Str("manifest", path).Msg(msg)
		if err := applyManifest(ctx, srv, pgqueue.DefaultAccount, m, stdout); err != nil {
			return err
		}
		if examples {
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
		}
		loggedIn := false
		if a := srv.Addr(); a != "" {
			lock.Update(fmt.Sprintf("sluice dev (pid %d, http://%s)", os.Getpid(), a))
			if err := devLogin(ctx, srv, pgqueue.DefaultAccount, self, stdout); err != nil {
				logger.Warn().Err(err).Msg("logging the CLI in failed")
			} else {
				loggedIn = true
			}
		}
		printDevHints(stdout, self, url, cfg.Schema, srv.Addr(), m, loggedIn)
		fmt.Fprintln(stdout, "Ctrl-C stops it.")
		return nil
	})
}

// selfCommand is how the user ran this sluice (bin/sluice, ./sluice or
// sluice on the PATH), for hints that work when typed.
func selfCommand() string {
	self := os.Args[0]
	if !strings.Contains(self, "/") {
		if _, err := exec.LookPath(self); err != nil {
			if exe, err := os.Executable(); err == nil {
				return exe
			}
		}
	}
	return self
}

// printDevHints prints commands to try, each one that works as typed:
// the CLI's only when it is logged in, psql's only when psql is installed,
// and a queue of the deployed manifest.
func printDevHints(w io.Writer, self, url, schema, addr string, m *manifest.Manifest, loggedIn bool) {
	queue := ""
	if _, ok := m.Queues["hello"]; ok {
		queue = "hello"
	} else if names := slices.Sorted(maps.Keys(m.Queues)); len(names) > 0 {
		queue = names[0]
	}
	fmt.Fprintf(w, "\nSluice is running on %s (schema %s). Try:\n", url, schema)
	if loggedIn {
		if queue != "" {
			fmt.Fprintf(w, "  %s mq send %s --body '{\"n\": 1}'\n", self, queue)
		}
		fmt.Fprintf(w, "  %s queues list --live\n", self)
		fmt.Fprintf(w, "  %s invocations\n", self)
		fmt.Fprintf(w, "  %s apps show %s\n", self, deploy.AppName(m))
	}
	if _, err := exec.LookPath("psql"); err == nil {
		if queue != "" {
			fmt.Fprintf(w, "  psql '%s' -c \"SELECT %s.send('%s', '{\\\"n\\\": 1}')\"\n", url, schema, queue)
		}
		fmt.Fprintf(w, "  psql '%s' -c 'SELECT * FROM %s.queue_stats'\n", url, schema)
	}
	if addr != "" {
		fmt.Fprintf(w, "  %s health --addr http://%s\n", self, addr)
	}
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

// applyManifest deploys m to account of the running dev server and prints
// its plan.
func applyManifest(ctx context.Context, srv *server.Server, account string, m *manifest.Manifest, w io.Writer) error {
	return deploycmd.WithApply(w, m, func(modules deploy.Modules, opts deploy.Options) (deploy.Plan, error) {
		return srv.Apply(ctx, account, m, modules, opts)
	})
}
