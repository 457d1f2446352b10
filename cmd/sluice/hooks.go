package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sluicehq/sluice/client"
)

func runHooks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "hooks", []subcommand{
		{"list", "", "list the webhook endpoints", hooksList},
		{"create", "NAME --queue Q --verify standard|github|stripe|none --secret-env VAR", "turn signed webhooks into messages of a queue (replaces a hook of that name)", hooksCreate},
		{"delete", "NAME", "delete a webhook endpoint", hooksDelete},
	}, args, stdout, stderr)
}

// hookURL is where a hook receives deliveries.
func hookURL(c *client.Client, name string) string {
	return strings.TrimRight(c.Endpoint(), "/") + "/hooks/" + c.Account() + "/" + name
}

func hooksList(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("hooks list", "")
	_, c, err := f.start(args, stdout)
	if err != nil {
		return err
	}
	hooks, err := c.Hooks.List(ctx)
	if err != nil {
		return err
	}
	return f.output(stdout, map[string][]client.Hook{"hooks": hooks}, func(w io.Writer) error {
		if len(hooks) == 0 {
			_, err := fmt.Fprintln(w, "no hooks (create one with `sluice hooks create NAME --queue Q --verify github --secret-env VAR`)")
			return err
		}
		rows := make([][]string, len(hooks))
		for i, h := range hooks {
			rows[i] = []string{h.Name, h.Queue, h.Verify, hookURL(c, h.Name)}
		}
		return table(w, "NAME\tQUEUE\tVERIFY\tURL", rows)
	})
}

func hooksCreate(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("hooks create", "NAME --queue Q --verify standard|github|stripe|none --secret-env VAR")
	var h client.Hook
	f.StringVar(&h.Queue, "queue", "", "queue the deliveries go to")
	f.StringVar(&h.Verify, "verify", "", "signature scheme: standard (Standard Webhooks), github, stripe or none")
	var envs listFlag
	f.Var(&envs, "secret-env", "environment variable holding the signing secret (repeat during a rotation); secrets never go on the command line")
	pos, err := f.parse(args, stdout, "NAME")
	if err != nil {
		return err
	}
	h.Name = pos[0]
	if h.Queue == "" {
		return usageErrorf("missing --queue Q")
	}
	switch h.Verify {
	case "standard", "github", "stripe":
		if len(envs) == 0 {
			return usageErrorf("--verify %s needs --secret-env VAR naming the variable that holds the signing secret", h.Verify)
		}
	case "none":
		if len(envs) > 0 {
			return usageErrorf("--verify none takes no --secret-env")
		}
	case "":
		return usageErrorf("missing --verify: use standard, github, stripe or none")
	default:
		return usageErrorf("--verify %q: use standard, github, stripe or none", h.Verify)
	}
	for _, name := range envs {
		v := os.Getenv(name)
		if v == "" {
			return usageErrorf("--secret-env %s: the variable is unset or empty", name)
		}
		h.Secrets = append(h.Secrets, v)
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	created, err := c.Hooks.Create(ctx, h)
	if err != nil {
		return err
	}
	url, verb := hookURL(c, h.Name), "replaced"
	if created {
		verb = "created"
	}
	return done(f, stdout, map[string]any{"name": h.Name, "queue": h.Queue, "verify": h.Verify, "url": url, "created": created},
		"%s hook %s: deliveries to %s go to queue %s", verb, h.Name, url, h.Queue)
}

func hooksDelete(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("hooks delete", "NAME")
	pos, c, err := f.start(args, stdout, "NAME")
	if err != nil {
		return err
	}
	if err := c.Hooks.Delete(ctx, pos[0]); err != nil {
		return err
	}
	return done(f, stdout, map[string]any{"name": pos[0], "deleted": true}, "deleted hook %s", pos[0])
}
