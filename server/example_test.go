package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/server"
)

// Bootstrap an account's first access key, then use the HTTP API with it.
// (The example migrates a throwaway schema of the database in
// TEST_DATABASE_URL.)
func ExampleServer_CreateKey() {
	ctx := context.Background()
	schema := fmt.Sprintf("example_server_%d", os.Getpid()) // unique per test process
	url := os.Getenv("TEST_DATABASE_URL")
	srv, err := server.Open(ctx, server.Config{DatabaseURL: url, Schema: schema, Migrate: true,
		MaxConns: 4, CacheDir: os.TempDir() + "/sluice-example", Logger: zerolog.Nop()})
	if err != nil {
		panic(err)
	}
	defer func() {
		_ = srv.Stop(ctx)
		if pool, err := pgxpool.New(ctx, url); err == nil {
			_, _ = pool.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			pool.Close()
		}
	}()
	id, secret, err := srv.CreateKey(ctx, "000000000042", []string{server.ScopeAllMQ}, []string{"orders*"}, "example")
	if err != nil {
		panic(err)
	}
	api := httptest.NewServer(srv.Handler())
	defer api.Close()

	call := func(method, path, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, api.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+id+":"+secret)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out
	}
	code, q := call("POST", "/v1/accounts/000000000042/queues", `{"name":"orders","visibility_timeout_seconds":60}`)
	fmt.Println(code, q["name"], q["visibility_timeout_seconds"], q["max_receive_count"])
	code, sent := call("POST", "/000000000042/orders/messages", `{"id":7}`)
	fmt.Println(code, sent)
	code, got := call("POST", "/000000000042/orders/messages/receive", `{"max_messages":10,"delete":true}`)
	fmt.Println(code, got["messages"].([]any)[0].(map[string]any)["body"])
	code, e := call("POST", "/000000000042/billing/messages", `{"id":8}`) // outside orders*
	fmt.Println(code, e["error"].(map[string]any)["code"])
	code, e = call("POST", "/000000000042/orders/messages", `[]`)
	fmt.Println(code, e["error"])
	// Output:
	// 201 orders 60 5
	// 201 map[sequence:1]
	// 200 map[id:7]
	// 403 forbidden
	// 400 map[code:invalid_argument message:a batch holds 1 to 10 messages, got 0]
}
