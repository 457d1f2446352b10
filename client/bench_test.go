package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/client/clienttest"
)

// BenchmarkClientOverhead is the client's own cost per send: encoding the
// body, building the request, decoding the response, against a server
// that answers at once without doing anything.
func BenchmarkClientOverhead(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"sequence":42}`+"\n")
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "k", "s")
	if err != nil {
		b.Fatal(err)
	}
	body := map[string]any{"id": 1, "email": "ada@example.com"}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.MQ.Send(ctx, "orders", body); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSendReceiveDelete goes through a real server and Postgres: one
// op is a send, a receive of that message and its delete, from parallel
// goroutines sharing one client.
func BenchmarkSendReceiveDelete(b *testing.B) {
	srv := clienttest.New(b)
	c := srv.Client(b)
	ctx := context.Background()
	if _, err := c.Queues.Create(ctx, "bench", client.QueueSettings{}); err != nil {
		b.Fatal(err)
	}
	body := map[string]any{"id": 1, "email": "ada@example.com"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.MQ.Send(ctx, "bench", body); err != nil {
				b.Fatal(err)
			}
			msgs, err := c.MQ.Receive(ctx, "bench", client.ReceiveOptions{})
			if err != nil {
				b.Fatal(err)
			}
			for _, m := range msgs {
				if err := c.MQ.Delete(ctx, "bench", m.Sequence, m.Receipt); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
