package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/pgqueue/migrate"
	apikeys "github.com/sluicehq/sluice/server/keys"
	"github.com/sluicehq/sluice/server/migrations"
)

func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "keys", []subcommand{
		{"create", "[--scope mq:* ...] [--queues 'orders-*'] [--description D] [--database]", "create an access key (its secret is shown once)", keysCreate},
		{"list", "", "list the access keys", keysList},
		{"revoke", "ID", "revoke an access key", keysRevoke},
	}, args, stdout, stderr)
}

// scopes are the scopes a key may get (docs/http-api.md).
var scopes = apikeys.Scopes

func keysCreate(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("keys create", "[--scope mq:* ...] [--queues 'orders-*'] [--description D] [--database]")
	var o client.KeyOptions
	var sc, qs listFlag
	f.Var(&sc, "scope", "scope to grant, repeatable or comma-separated: "+strings.Join(scopes, ", ")+" (default mq:*)")
	f.Var(&qs, "queues", "limit the data plane to these queue-name patterns, repeatable or comma-separated (default *)")
	f.StringVar(&o.Description, "description", "", "what the key is for")
	database := f.Bool("database", false, "create it directly in DATABASE_URL instead of through the API (the first key of a new server)")
	schema := f.String("schema", envOr("SLUICE_SCHEMA", "sluice"), "with --database: the database schema [SLUICE_SCHEMA]")
	if _, err := f.parse(args, stdout); err != nil {
		return err
	}
	if len(sc) == 0 {
		sc = listFlag{"mq:*"}
	}
	for _, s := range sc {
		if !contains(scopes, s) {
			return usageErrorf("--scope %q: use %s", s, strings.Join(scopes, ", "))
		}
	}
	o.Scopes, o.Queues = sc, qs
	var k client.NewKey
	endpoint := "URL"
	if *database {
		account := f.account
		if account == "" {
			account = envOr(client.EnvAccount, client.DefaultAccount)
		}
		var err error
		url := os.Getenv("DATABASE_URL")
		if url == "" {
			return usageErrorf("--database: DATABASE_URL is not set")
		}
		if k, err = createKeyInDatabase(ctx, url, *schema, account, o); err != nil {
			return err
		}
	} else {
		c, err := f.client()
		if err != nil {
			return err
		}
		if k, err = c.Keys.Create(ctx, o); err != nil {
			return err
		}
		endpoint = c.Endpoint()
	}
	return f.output(stdout, k, func(w io.Writer) error {
		fmt.Fprintf(w, "created key %s (scopes %s)\n", k.ID, strings.Join(sc, " "))
		fmt.Fprintf(w, "secret: %s\n", k.Secret)
		fmt.Fprintf(w, "\nThe secret is shown only this once. Use the key with:\n")
		fmt.Fprintf(w, "  export SLUICE_KEY=%s\n", k)
		fmt.Fprintf(w, "or: sluice login --endpoint %s --key %s\n", endpoint, k)
		return nil
	})
}

// createKeyInDatabase creates a key with package keys on DATABASE_URL
// (migrating it first), for bootstrapping: no key exists yet to call the
// API with.
func createKeyInDatabase(ctx context.Context, url, schema, account string, o client.KeyOptions) (client.NewKey, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return client.NewKey{}, fmt.Errorf("connect to DATABASE_URL: %w", err)
	}
	defer pool.Close()
	if err := migrate.Up(ctx, pool, schema, migrations.All...); err != nil {
		return client.NewKey{}, err
	}
	queue, err := pgqueue.New(pool, pgqueue.Options{Schema: schema})
	if err != nil {
		return client.NewKey{}, err
	}
	store, err := apikeys.NewStore(queue)
	if err != nil {
		return client.NewKey{}, err
	}
	id, secret, err := store.Create(ctx, account, o.Scopes, o.Queues, o.Description)
	return client.NewKey{ID: id, Secret: secret}, err
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

func keysList(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("keys list", "")
	_, c, err := f.start(args, stdout)
	if err != nil {
		return err
	}
	keys, err := c.Keys.List(ctx)
	if err != nil {
		return err
	}
	return f.output(stdout, map[string][]client.Key{"keys": keys}, func(w io.Writer) error {
		rows := make([][]string, len(keys))
		for i, k := range keys {
			revoked := "-"
			if k.RevokedAt != nil {
				revoked = stamp(*k.RevokedAt)
			}
			queues := strings.Join(k.Queues, ",")
			if queues == "" {
				queues = "*"
			}
			rows[i] = []string{k.ID, strings.Join(k.Scopes, ","), queues, stamp(k.CreatedAt), revoked, orDash(k.Description)}
		}
		return table(w, "ID\tSCOPES\tQUEUES\tCREATED\tREVOKED\tDESCRIPTION", rows)
	})
}

func keysRevoke(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("keys revoke", "ID")
	pos, c, err := f.start(args, stdout, "ID")
	if err != nil {
		return err
	}
	if err := c.Keys.Revoke(ctx, pos[0]); err != nil {
		return err
	}
	return done(f, stdout, map[string]any{"id": pos[0], "revoked": true}, "revoked key %s", pos[0])
}
