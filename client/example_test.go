package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"testing"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/client/clienttest"
)

// The examples talk to a real server, started once for the package on
// TEST_DATABASE_URL; endpoint, keyID and secret are its.
var endpoint, keyID, secret string

func TestMain(m *testing.M) {
	ctx := context.Background()
	srv, err := clienttest.Start(ctx, os.Getenv(clienttest.EnvVar))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	endpoint = srv.URL
	if keyID, secret, err = srv.CreateKey(ctx, client.DefaultAccount, clienttest.AllScopes, nil, "examples"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// Send a message, receive it and acknowledge it.
func Example() {
	ctx := context.Background()
	c, err := client.New(endpoint, keyID, secret) // or client.FromEnv()
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Queues.Create(ctx, "orders", client.QueueSettings{MaxReceiveCount: client.Int(3)}); err != nil {
		log.Fatal(err)
	}

	type order struct {
		ID    int    `json:"id"`
		Email string `json:"email"`
	}
	if _, err := c.MQ.Send(ctx, "orders", order{ID: 1, Email: "ada@example.com"}); err != nil {
		log.Fatal(err)
	}

	msgs, err := c.MQ.Receive(ctx, "orders", client.ReceiveOptions{MaxMessages: 10, WaitSeconds: 5})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		var o order
		if err := json.Unmarshal(m.Body, &o); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("order %d for %s, delivery %d\n", o.ID, o.Email, m.ReceiveCount)
		// Acknowledge, fenced by the receipt: if the lease expired and
		// someone else received the message since, this is refused.
		if err := c.MQ.Delete(ctx, "orders", m.Sequence, m.Receipt); err != nil {
			log.Fatal(err)
		}
	}
	// Output: order 1 for ada@example.com, delivery 1
}

// Branch on what the API refused.
func ExampleError() {
	ctx := context.Background()
	c, err := client.New(endpoint, keyID, secret)
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.MQ.Send(ctx, "no-such-queue", map[string]string{"hello": "world"})
	switch {
	case errors.Is(err, client.ErrQueueNotFound):
		fmt.Println("no such queue:", client.StatusOf(err), client.CodeOf(err))
	case client.IsForbidden(err):
		fmt.Println("the key may not send there")
	case err != nil:
		log.Fatal(err)
	}

	// Arguments out of range are refused before anything is sent.
	_, err = c.MQ.Receive(ctx, "orders", client.ReceiveOptions{MaxMessages: 11})
	fmt.Println(err)
	// Output:
	// no such queue: 404 queue_not_found
	// max_messages 11: must be 1 to 10
}

// Send up to ten messages in one transaction.
func ExampleMQService_SendBatch() {
	ctx := context.Background()
	c, err := client.New(endpoint, keyID, secret)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Queues.Create(ctx, "emails", client.QueueSettings{}); err != nil {
		log.Fatal(err)
	}
	seqs, err := c.MQ.SendBatch(ctx, "emails", []any{
		map[string]string{"to": "ada@example.com"},
		json.RawMessage(`{"to":"grace@example.com"}`),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(seqs), "sent, in order:", seqs[0] < seqs[1])
	q, err := c.Queues.Get(ctx, "emails")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("ready:", q.Stats.Ready)
	// Output:
	// 2 sent, in order: true
	// ready: 2
}
