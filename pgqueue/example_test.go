package pgqueue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/pgqueue/migrate"
)

// Send, receive and acknowledge a message. (The example migrates a
// throwaway schema of the database in TEST_DATABASE_URL.)
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("TEST_DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	const schema = "example_pgqueue"
	if err := migrate.Up(ctx, pool, schema, pgqueue.Migrations); err != nil {
		panic(err)
	}
	defer pool.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")

	c, err := pgqueue.New(pool, pgqueue.Options{Schema: schema})
	if err != nil {
		panic(err)
	}
	if _, err := c.CreateQueue(ctx, pgqueue.DefaultAccount, "emails", pgqueue.Settings{}); err != nil {
		panic(err)
	}
	if _, err := c.Send(ctx, pgqueue.DefaultAccount, "emails", pgqueue.NewMessage{Body: json.RawMessage(`{"to":"ada@example.com"}`)}); err != nil {
		panic(err)
	}
	msgs, err := c.Receive(ctx, pgqueue.DefaultAccount, "emails", pgqueue.ReceiveOptions{Max: 10})
	if err != nil {
		panic(err)
	}
	for _, m := range msgs {
		fmt.Printf("%s (delivery %d)\n", m.Body, m.ReceiveCount)
		if err := c.Delete(ctx, pgqueue.DefaultAccount, "emails", m.Sequence, m.Receipt); err != nil {
			panic(err)
		}
	}
	_, err = c.Send(ctx, pgqueue.DefaultAccount, "a/b", pgqueue.NewMessage{Body: json.RawMessage(`1`)})
	fmt.Println(err)
	// Output:
	// {"to": "ada@example.com"} (delivery 1)
	// pgqueue: invalid queue name "a/b": use 1-80 characters from A-Z a-z 0-9 _ -
}
