package server

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/wire"
)

func TestAccessKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, admin := e.admin("orders-eu")
	e.do(admin, "POST", "/v1/accounts/"+acct+"/queues", `{"name":"billing"}`).expect(201)
	q := "/" + acct + "/orders-eu"

	// No, malformed, unknown, wrong and revoked keys: all 401.
	e.do("", "GET", q+"/messages", "").expectError(401, "unauthorized")
	unauthorized := e.do("garbage", "GET", q+"/messages", "").expectError(401, "unauthorized")
	if msg := e.do("sk_aaaaaaaaaaaaaaaaaaaa:secret", "GET", q+"/messages", "").expectError(401, "unauthorized"); msg != unauthorized {
		t.Fatalf("unknown key says %q, malformed %q", msg, unauthorized)
	}
	id := admin[:23]
	wrong := e.do(id+":not-the-secret", "GET", q+"/messages", "")
	wrong.expectError(401, "unauthorized")

	// Scopes.
	sender := e.key(acct, []string{ScopeSend})
	e.do(sender, "POST", q+"/messages", `{}`).expect(201)
	e.do(sender, "GET", q+"/messages", "").expectError(403, "forbidden")
	e.do(sender, "DELETE", q+"/messages", "").expectError(403, "forbidden")
	e.do(sender, "GET", "/v1/accounts/"+acct+"/keys", "").expectError(403, "forbidden")
	e.do(sender, "GET", "/v1/accounts/"+acct+"/functions", "").expectError(403, "forbidden")
	deployer := e.key(acct, []string{ScopeDeploy})
	e.do(deployer, "GET", "/v1/accounts/"+acct+"/functions", "").expect(200)

	// Queue patterns: orders-* only.
	limited := e.key(acct, []string{ScopeAllMQ}, "orders-*")
	e.do(limited, "POST", q+"/messages", `{}`).expect(201)
	e.do(limited, "POST", "/"+acct+"/billing/messages", `{}`).expectError(403, "forbidden")
	var list struct{ Queues []wire.Queue }
	e.do(limited, "GET", "/v1/accounts/"+acct+"/queues", "").expect(200).decode(&list)
	if len(list.Queues) != 1 || list.Queues[0].Name != "orders-eu" {
		t.Fatalf("limited key lists %+v", list.Queues)
	}
	e.do(limited, "POST", "/v1/accounts/"+acct+"/queues", `{"name":"billing2"}`).expectError(403, "forbidden")
	e.do(limited, "PUT", "/v1/accounts/"+acct+"/triggers/t", `{"kind":"queue","queue":"billing","function":"f"}`).expectError(403, "forbidden")
	e.do(limited, "POST", "/v1/accounts/"+acct+"/hooks", `{"name":"h","queue":"billing","verify":"none"}`).expectError(403, "forbidden")
	e.deployTrap(acct, "f")
	e.do(limited, "PUT", "/v1/accounts/"+acct+"/triggers/t", `{"kind":"queue","queue":"orders-eu","function":"f"}`).expect(200)
	// A limited key cannot mint a wider one, nor scopes it lacks.
	e.do(limited, "POST", "/v1/accounts/"+acct+"/keys", `{"scopes":["mq:send"],"queues":["*"]}`).expectError(403, "forbidden")
	e.do(limited, "POST", "/v1/accounts/"+acct+"/keys", `{"scopes":["functions:deploy"],"queues":["orders-*"]}`).expectError(403, "forbidden")

	// Accounts are isolated: a key of another account gets 403, even
	// with every scope.
	other, otherTok := e.admin("orders-eu")
	e.do(otherTok, "POST", q+"/messages", `{}`).expectError(403, "forbidden")
	e.do(otherTok, "GET", "/v1/accounts/"+acct+"/queues", "").expectError(403, "forbidden")
	e.do(admin, "DELETE", "/"+other+"/orders-eu/messages", "").expectError(403, "forbidden")
	e.do(admin, "DELETE", "/v1/accounts/"+other+"/keys/"+otherTok[:23], "").expectError(403, "forbidden")
	e.do(admin, "DELETE", "/v1/accounts/"+acct+"/keys/"+otherTok[:23], "").expectError(404, "not_found")

	// Create, list and revoke through the API.
	var created struct{ ID, Secret string }
	e.do(admin, "POST", "/v1/accounts/"+acct+"/keys", `{"scopes":["mq:receive"],"queues":["orders-*"],"description":"reader"}`).expect(201).decode(&created)
	reader := created.ID + ":" + created.Secret
	e.do(reader, "GET", q+"/messages", "").expect(200)
	var keys struct{ Keys []Key }
	e.do(admin, "GET", "/v1/accounts/"+acct+"/keys", "").expect(200).decode(&keys)
	found := false
	for _, k := range keys.Keys {
		if k.ID == created.ID {
			found = k.Description == "reader" && k.RevokedAt == nil && k.Queues[0] == "orders-*"
		}
	}
	if !found || len(keys.Keys) != 5 {
		t.Fatalf("keys %+v", keys.Keys)
	}
	if string(e.do(admin, "GET", "/v1/accounts/"+acct+"/keys", "").body) == "" {
		t.Fatal("empty key list")
	}
	e.do(admin, "DELETE", "/v1/accounts/"+acct+"/keys/"+created.ID, "").expect(204)
	// Revoked in this process: at once, with the same 401 as an unknown key.
	if msg := e.do(reader, "GET", q+"/messages", "").expectError(401, "unauthorized"); msg != unauthorized {
		t.Fatalf("revoked key says %q", msg)
	}
	e.do(admin, "DELETE", "/v1/accounts/"+acct+"/keys/"+created.ID, "").expect(204)

	// Bad key specs.
	e.do(admin, "POST", "/v1/accounts/"+acct+"/keys", `{"scopes":["mq:everything"]}`).expectError(400, "invalid_argument")
	e.do(admin, "POST", "/v1/accounts/"+acct+"/keys", `{"scopes":[]}`).expectError(400, "invalid_argument")
	e.do(admin, "POST", "/v1/accounts/"+acct+"/keys", `{"scopes":["mq:send"],"queues":["[a-"]}`).expectError(400, "invalid_argument")
}

func TestRevokeFromAnotherProcessWithinCacheTTL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, admin := e.admin("q")
	path := "/" + acct + "/q/messages"
	e.do(admin, "GET", path, "").expect(200) // now cached
	// Another process revokes: straight in the database, not through this
	// process's cache.
	if _, err := e.srv.pool.Exec(context.Background(),
		fmt.Sprintf("UPDATE %s.access_keys SET revoked_at = now() WHERE id = $1", e.srv.cfg.Schema), admin[:23]); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(keyCacheTTL + 10*time.Second)
	for {
		r := e.do(admin, "GET", path, "")
		if r.status == 401 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("revoked key still accepted after %v", keyCacheTTL+10*time.Second)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func TestCreateKeyValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	for _, tc := range []struct {
		account        string
		scopes, queues []string
	}{
		{"123", []string{ScopeSend}, nil},
		{"000000000009", nil, nil},
		{"000000000009", []string{"admin"}, nil},
		{"000000000009", []string{ScopeSend}, []string{""}},
	} {
		if _, _, err := e.srv.CreateKey(ctx, tc.account, tc.scopes, tc.queues, ""); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("CreateKey(%q, %v, %v) = %v, want ErrInvalidKey", tc.account, tc.scopes, tc.queues, err)
		}
	}
	// A new account is created on the way.
	id, secret, err := e.srv.CreateKey(ctx, "000000000009", []string{ScopeAdmin}, nil, "bootstrap")
	if err != nil || len(id) != 23 || len(secret) < 40 {
		t.Fatalf("CreateKey = %q, %q, %v", id, secret, err)
	}
	e.do(id+":"+secret, "POST", "/v1/accounts/000000000009/queues", `{"name":"first"}`).expect(201)
	keys, err := e.srv.ListKeys(ctx, "000000000009")
	if err != nil || len(keys) != 1 || keys[0].Queues[0] != "*" {
		t.Fatalf("ListKeys = %+v, %v", keys, err)
	}
}
