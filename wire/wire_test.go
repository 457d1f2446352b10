package wire_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/wire"
)

var (
	t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	t1 = time.Date(2026, 11, 30, 12, 0, 30, 500000000, time.UTC)
)

func ptr[T any](v T) *T { return &v }

// goldens pins the JSON of every type: a field renamed, retagged or
// reordered fails here, and so does a value that does not decode back to
// itself.
var goldens = []struct {
	name string
	v    any
	json string
}{
	{"ErrorResponse", wire.ErrorResponse{Error: wire.ErrorBody{Code: wire.CodeQueueNotFound, Message: `queue "x" not found`}},
		`{"error":{"code":"queue_not_found","message":"queue \"x\" not found"}}`},
	{"Message", wire.Message{Sequence: 7, Body: json.RawMessage(`{"a":1}`), Headers: json.RawMessage(`null`), CreatedAt: t0,
		ReceiveCount: 2, VisibleAt: t1, Receipt: "0190a6e5-7c3b-7d2a-9f3e-1b2c3d4e5f60"},
		`{"sequence":7,"body":{"a":1},"headers":null,"created_at":"2026-11-30T12:00:00Z","receive_count":2,"visible_at":"2026-11-30T12:00:30.5Z","receipt":"0190a6e5-7c3b-7d2a-9f3e-1b2c3d4e5f60"}`},
	{"Message/peeked", wire.Message{Sequence: 1, Body: json.RawMessage(`[1]`), Headers: json.RawMessage(`{"h":"v"}`), CreatedAt: t0, VisibleAt: t0},
		`{"sequence":1,"body":[1],"headers":{"h":"v"},"created_at":"2026-11-30T12:00:00Z","receive_count":0,"visible_at":"2026-11-30T12:00:00Z"}`},
	{"QueueList/next", wire.QueueList{Queues: []wire.Queue{}, Next: "orders"}, `{"queues":[],"next":"orders"}`},
	{"MessageList", wire.MessageList{Messages: []wire.Message{}}, `{"messages":[]}`},
	{"DeadLetter", wire.DeadLetter{Sequence: 3, Body: json.RawMessage(`"x"`), Headers: json.RawMessage(`null`), CreatedAt: t0,
		ReceiveCount: 5, FailedAt: t1, Reason: "max_receive_count", LastError: "smtp 451"},
		`{"sequence":3,"body":"x","headers":null,"created_at":"2026-11-30T12:00:00Z","receive_count":5,"failed_at":"2026-11-30T12:00:30.5Z","reason":"max_receive_count","last_error":"smtp 451"}`},
	{"DeadLetterList", wire.DeadLetterList{Messages: []wire.DeadLetter{}}, `{"messages":[]}`},
	{"SendResult", wire.SendResult{Sequence: 42}, `{"sequence":42}`},
	{"SendBatchResult", wire.SendBatchResult{Sequences: []int64{1, 2}}, `{"sequences":[1,2]}`},
	{"SendEntriesRequest", wire.SendEntriesRequest{Entries: []wire.SendEntry{
		{Body: json.RawMessage(`{"a":1}`), Headers: map[string]string{"k": "v"}, DelaySeconds: 5, ExpiresInSeconds: 60, DedupKey: "d"},
		{Body: json.RawMessage(`"x"`)}}},
		`{"entries":[{"body":{"a":1},"headers":{"k":"v"},"delay_seconds":5,"expires_in_seconds":60,"dedup_key":"d"},{"body":"x"}]}`},
	{"ReceiveRequest", wire.ReceiveRequest{Delete: true, MaxMessages: 10, VisibilityTimeoutSeconds: 60, WaitSeconds: 20},
		`{"delete":true,"max_messages":10,"visibility_timeout_seconds":60,"wait_seconds":20}`},
	{"ReceiveRequest/defaults", wire.ReceiveRequest{MaxMessages: 1}, `{"max_messages":1}`},
	{"VisibilityRequest", wire.VisibilityRequest{Receipt: "r", Seconds: 30}, `{"receipt":"r","seconds":30}`},
	{"VisibilityRequest/now", wire.VisibilityRequest{}, `{"seconds":0}`},
	{"PurgeResult", wire.PurgeResult{Purged: 9}, `{"purged":9}`},
	{"RedriveRequest/all", wire.RedriveRequest{}, `{}`},
	{"RedriveRequest/max", wire.RedriveRequest{MaxMessages: 5}, `{"max_messages":5}`},
	{"RedriveRequest/sequences", wire.RedriveRequest{Sequences: []int64{4, 8}}, `{"sequences":[4,8]}`},
	{"RedriveResult", wire.RedriveResult{Redriven: 2}, `{"redriven":2}`},

	{"Queue", wire.Queue{Name: "orders", VisibilityTimeoutSeconds: 30, MaxReceiveCount: 5, RetentionSeconds: 345600,
		MaxMessageBytes: 262144, DedupWindowSeconds: 300, CreatedAt: t0, UpdatedAt: t1},
		`{"name":"orders","visibility_timeout_seconds":30,"max_receive_count":5,"delay_seconds":0,"retention_seconds":345600,"max_message_bytes":262144,"dedup_window_seconds":300,"created_at":"2026-11-30T12:00:00Z","updated_at":"2026-11-30T12:00:30.5Z"}`},
	{"QueueList/live", wire.QueueList{Queues: []wire.Queue{{Name: "q", CreatedAt: t0, UpdatedAt: t0,
		Stats: &wire.QueueStats{Ready: 1, Inflight: 2, Delayed: 3, DLQ: 4, OldestReadyAgeSeconds: 1.5, Bytes: 5, DLQBytes: 6}}}},
		`{"queues":[{"name":"q","visibility_timeout_seconds":0,"max_receive_count":0,"delay_seconds":0,"retention_seconds":0,"max_message_bytes":0,"dedup_window_seconds":0,"created_at":"2026-11-30T12:00:00Z","updated_at":"2026-11-30T12:00:00Z","stats":{"ready":1,"inflight":2,"delayed":3,"dlq":4,"oldest_ready_age_seconds":1.5,"bytes":5,"dlq_bytes":6}}]}`},
	{"QueueSettings", wire.QueueSettings{VisibilityTimeoutSeconds: ptr(0), MaxReceiveCount: ptr(3), DelaySeconds: ptr(1),
		RetentionSeconds: ptr(60), MaxMessageBytes: ptr(1024), DedupWindowSeconds: ptr(10)},
		`{"visibility_timeout_seconds":0,"max_receive_count":3,"delay_seconds":1,"retention_seconds":60,"max_message_bytes":1024,"dedup_window_seconds":10}`},
	{"QueueSettings/none", wire.QueueSettings{}, `{}`},
	{"QueueSettings/dead_letter_queue", wire.QueueSettings{DeadLetterQueue: ptr("dead")}, `{"dead_letter_queue":"dead"}`},
	{"Queue/dead_letter_queue", wire.Queue{Name: "q", DeadLetterQueue: "dead", CreatedAt: t0, UpdatedAt: t0},
		`{"name":"q","visibility_timeout_seconds":0,"max_receive_count":0,"delay_seconds":0,"retention_seconds":0,"max_message_bytes":0,"dedup_window_seconds":0,"dead_letter_queue":"dead","created_at":"2026-11-30T12:00:00Z","updated_at":"2026-11-30T12:00:00Z"}`},
	{"CreateQueueRequest", wire.CreateQueueRequest{Name: "orders", QueueSettings: wire.QueueSettings{MaxReceiveCount: ptr(3)}},
		`{"name":"orders","max_receive_count":3}`},
	{"MinuteStatsList", wire.MinuteStatsList{Queue: "orders", Minutes: []wire.MinuteStats{
		{Minute: t0, Sends: 12, Acks: 10, DLQMoves: 1, Ready: ptr[int64](3), Inflight: ptr[int64](1), Delayed: ptr[int64](0), DLQ: ptr[int64](2)},
		{Minute: t0.Add(time.Minute)}}},
		`{"minutes":[{"minute":"2026-11-30T12:00:00Z","sends":12,"acks":10,"dlq_moves":1,"ready":3,"inflight":1,"delayed":0,"dlq":2},{"minute":"2026-11-30T12:01:00Z","sends":0,"acks":0,"dlq_moves":0,"ready":null,"inflight":null,"delayed":null,"dlq":null}],"queue":"orders"}`},

	{"TopicList", wire.TopicList{Topics: []wire.Topic{{Name: "orders", CreatedAt: t0, Subscriptions: []wire.Subscription{
		{Queue: "billing", Filter: map[string]string{"type": "order"}, Source: "api"}, {Queue: "shipping", Source: "manifest"}}}}},
		`{"topics":[{"name":"orders","created_at":"2026-11-30T12:00:00Z","subscriptions":[{"queue":"billing","filter":{"type":"order"},"source":"api"},{"queue":"shipping","source":"manifest"}]}]}`},
	{"CreateTopicRequest", wire.CreateTopicRequest{Name: "orders"}, `{"name":"orders"}`},
	{"SubscribeRequest", wire.SubscribeRequest{Filter: map[string]string{"type": "order"}, Source: "manifest"}, `{"filter":{"type":"order"},"source":"manifest"}`},
	{"PublishResult", wire.PublishResult{Copies: 2}, `{"copies":2}`},
	{"PublishBatchResult", wire.PublishBatchResult{Copies: []int{2, 0}}, `{"copies":[2,0]}`},
	{"PublishEntriesRequest", wire.PublishEntriesRequest{Entries: []wire.PublishEntry{{Body: json.RawMessage(`{"a":1}`),
		Headers: json.RawMessage(`{"type":"order"}`), DelaySeconds: 5}}},
		`{"entries":[{"body":{"a":1},"headers":{"type":"order"},"delay_seconds":5}]}`},

	{"Function", wire.Function{Name: "send-email", LatestVersion: 2, Aliases: map[string]int{"live": 2}, RollbackTo: map[string]int{"live": 1},
		CreatedAt: t0, Versions: []wire.FunctionVersion{{Version: 1, SHA256: "ab", SizeBytes: 100, MemoryMB: 64, TimeoutMS: 30000,
			Env: map[string]string{}, CreatedAt: t0}, {Version: 2, SHA256: "cd", SizeBytes: 200, MemoryMB: 128, TimeoutMS: 1000,
			Env: map[string]string{"TOKEN": "****"}, CreatedAt: t1}}},
		`{"name":"send-email","latest_version":2,"aliases":{"live":2},"rollback_to":{"live":1},"created_at":"2026-11-30T12:00:00Z","versions":[{"version":1,"sha256":"ab","size_bytes":100,"memory_mb":64,"timeout_ms":30000,"env":{},"created_at":"2026-11-30T12:00:00Z"},{"version":2,"sha256":"cd","size_bytes":200,"memory_mb":128,"timeout_ms":1000,"env":{"TOKEN":"****"},"created_at":"2026-11-30T12:00:30.5Z"}]}`},
	{"FunctionList", wire.FunctionList{Functions: []wire.Function{{Name: "f", LatestVersion: 1, Aliases: map[string]int{}, RollbackTo: map[string]int{}, CreatedAt: t0}}},
		`{"functions":[{"name":"f","latest_version":1,"aliases":{},"rollback_to":{},"created_at":"2026-11-30T12:00:00Z"}]}`},
	{"Deployment", wire.Deployment{Version: 3, Created: true, AliasMoved: true, SHA256: "ef"},
		`{"alias_moved":true,"created":true,"sha256":"ef","version":3}`},
	{"Deployment/compiling", wire.Deployment{SHA256: "ef", Status: wire.DeployCompiling, ID: "d1"},
		`{"alias_moved":false,"created":false,"sha256":"ef","version":0,"status":"compiling","id":"d1"}`},
	{"Deployment/failed", wire.Deployment{SHA256: "ef", Status: wire.DeployFailed, ID: "d1", Error: &wire.ErrorBody{Code: "invalid_argument", Message: "m"}},
		`{"alias_moved":false,"created":false,"sha256":"ef","version":0,"status":"failed","id":"d1","error":{"code":"invalid_argument","message":"m"}}`},
	{"SetAliasRequest", wire.SetAliasRequest{Version: 2}, `{"version":2}`},
	{"RollbackRequest", wire.RollbackRequest{Alias: "live"}, `{"alias":"live"}`},
	{"RollbackResult", wire.RollbackResult{Version: 1}, `{"version":1}`},

	{"Trigger/queue", wire.Trigger{Name: "t", Kind: "queue", Function: "f", Alias: "live", Queue: "q", DLQ: true, BatchSize: 5,
		BatchWindowMS: 100, Concurrency: 2, AckPolicy: "ack_first", BackoffInitialMS: 1000, BackoffMaxMS: 60000,
		LeaseExtension: ptr(false), Enabled: ptr(true), Source: "manifest", UpdatedAt: t0},
		`{"name":"t","kind":"queue","function":"f","alias":"live","queue":"q","dlq":true,"batch_size":5,"batch_window_ms":100,"concurrency":2,"ack_policy":"ack_first","backoff_initial_ms":1000,"backoff_max_ms":60000,"lease_extension":false,"enabled":true,"source":"manifest","updated_at":"2026-11-30T12:00:00Z"}`},
	{"Trigger/cron-put", wire.Trigger{Name: "nightly", Kind: "cron", Queue: "q", CronSpec: "0 3 * * *", Timezone: "Europe/Paris",
		EnqueueBody: json.RawMessage(`{"job":"x"}`)},
		`{"name":"nightly","kind":"cron","queue":"q","cron_spec":"0 3 * * *","timezone":"Europe/Paris","enqueue_body":{"job":"x"}}`},
	{"TriggerList", wire.TriggerList{Triggers: []wire.TriggerInfo{{Name: "t", Kind: "queue", Function: "f", Alias: "live", Queue: "q",
		BatchSize: 10, Concurrency: 1, AckPolicy: "ack", BackoffInitialMS: 1000, BackoffMaxMS: 300000, LeaseExtension: true,
		Timezone: "UTC", Enabled: true, Source: "api", UpdatedAt: t0}}},
		`{"triggers":[{"name":"t","kind":"queue","function":"f","alias":"live","queue":"q","dlq":false,"batch_size":10,"batch_window_ms":0,"concurrency":1,"ack_policy":"ack","backoff_initial_ms":1000,"backoff_max_ms":300000,"lease_extension":true,"timezone":"UTC","enabled":true,"source":"api","updated_at":"2026-11-30T12:00:00Z"}]}`},
	{"PutTriggerResult", wire.PutTriggerResult{Name: "t", Changed: true}, `{"changed":true,"name":"t"}`},
	{"InvocationList", wire.InvocationList{Invocations: []wire.Invocation{
		{ID: 9, Function: "f", Version: 2, TriggerID: ptr[int64](4), Trigger: "t", TriggerType: "queue", Source: "q", BatchSize: 2,
			StartedAt: t0, DurationMS: 1.25, Outcome: "partial_failure", FailureKind: "invalid_output", Error: "boom", Acked: 1,
			Retried: 1, MessageIDs: []int64{7, 8}, Stderr: "log"},
		{ID: 8, Function: "f", Version: 1, TriggerType: "cron", Source: "0 * * * *", BatchSize: 1, StartedAt: t1, Outcome: "success", Acked: 1}}},
		`{"invocations":[{"id":9,"function":"f","version":2,"trigger_id":4,"trigger":"t","trigger_type":"queue","source":"q","batch_size":2,"started_at":"2026-11-30T12:00:00Z","duration_ms":1.25,"outcome":"partial_failure","failure_kind":"invalid_output","error":"boom","acked":1,"retried":1,"dead":0,"emitted":0,"message_ids":[7,8],"stderr":"log"},{"id":8,"function":"f","version":1,"trigger_id":null,"trigger":"","trigger_type":"cron","source":"0 * * * *","batch_size":1,"started_at":"2026-11-30T12:00:30.5Z","duration_ms":0,"outcome":"success","acked":1,"retried":0,"dead":0,"emitted":0,"message_ids":null}]}`},

	{"KeyList", wire.KeyList{Keys: []wire.Key{
		{ID: "sk_a", Account: "000000000001", Scopes: []string{"mq:*"}, Queues: []string{"*"}, Description: "d", CreatedAt: t0},
		{ID: "sk_b", Account: "000000000001", Scopes: []string{"mq:send"}, Queues: []string{"orders-*"}, CreatedAt: t0, RevokedAt: ptr(t1)}}},
		`{"keys":[{"id":"sk_a","account":"000000000001","scopes":["mq:*"],"queues":["*"],"description":"d","created_at":"2026-11-30T12:00:00Z","revoked_at":null},{"id":"sk_b","account":"000000000001","scopes":["mq:send"],"queues":["orders-*"],"description":"","created_at":"2026-11-30T12:00:00Z","revoked_at":"2026-11-30T12:00:30.5Z"}]}`},
	{"CreateKeyRequest", wire.CreateKeyRequest{Scopes: []string{"mq:send"}, Queues: []string{"orders-*"}, Description: "d"},
		`{"scopes":["mq:send"],"queues":["orders-*"],"description":"d"}`},
	{"CreateKeyRequest/every-queue", wire.CreateKeyRequest{Scopes: []string{"mq:*"}}, `{"scopes":["mq:*"],"description":""}`},
	{"NewKey", wire.NewKey{ID: "sk_a", Secret: "s3cret"}, `{"id":"sk_a","secret":"s3cret"}`},

	{"Hook", wire.Hook{Name: "gh", Queue: "q", Verify: "github", SecretCount: 2, Source: "api", CreatedAt: t0, UpdatedAt: t1},
		`{"name":"gh","queue":"q","verify":"github","secret_count":2,"source":"api","created_at":"2026-11-30T12:00:00Z","updated_at":"2026-11-30T12:00:30.5Z"}`},
	{"CreateHookRequest", wire.CreateHookRequest{Name: "gh", Queue: "q", Verify: "github", Secrets: []string{"a", "b"}, Source: "manifest"},
		`{"name":"gh","queue":"q","verify":"github","secrets":["a","b"],"source":"manifest"}`},
	{"CreateHookRequest/none", wire.CreateHookRequest{Name: "h", Queue: "q", Verify: "none"}, `{"name":"h","queue":"q","verify":"none"}`},
	{"CreateHookResult", wire.CreateHookResult{Name: "gh", Queue: "q", Verify: "github", SecretCount: 1, Created: true},
		`{"created":true,"name":"gh","queue":"q","secret_count":1,"verify":"github"}`},
	{"WebhookResult", wire.WebhookResult{Sequence: 42}, `{"sequence":42}`},
	{"WebhookResult/duplicate", wire.WebhookResult{Duplicate: true, Sequence: 41}, `{"duplicate":true,"sequence":41}`},
	{"HookList", wire.HookList{Hooks: []wire.HookInfo{{Name: "h", Queue: "q", Verify: "none", Source: "api", CreatedAt: t0, UpdatedAt: t0}}},
		`{"hooks":[{"name":"h","queue":"q","verify":"none","secret_count":0,"source":"api","created_at":"2026-11-30T12:00:00Z","updated_at":"2026-11-30T12:00:00Z"}]}`},

	{"AppList", wire.AppList{Apps: []wire.AppSummary{{Name: "shop", Queues: 2, Functions: 1, Triggers: 1, Hooks: 0}}},
		`{"apps":[{"name":"shop","queues":2,"functions":1,"triggers":1,"hooks":0}]}`},
	{"App", wire.App{Name: "shop", Resources: []wire.AppResource{{Kind: "queue", Name: "orders", App: "shop", Messages: ptr[int64](3)},
		{Kind: "function", Name: "f", App: "shop"}}},
		`{"name":"shop","resources":[{"kind":"queue","name":"orders","app":"shop","messages":3},{"kind":"function","name":"f","app":"shop"}]}`},
	{"DeployState", wire.DeployState{Resources: []wire.AppResource{{Kind: "queue", Name: "orders", App: "", Fields: map[string]string{"max_receive_count": "5"}}},
		Topics: []wire.Topic{}},
		`{"resources":[{"kind":"queue","name":"orders","app":"","fields":{"max_receive_count":"5"}}],"topics":[]}`},
	{"DeployPlan", wire.DeployPlan{App: "shop", Applied: true, Steps: []wire.PlanStep{
		{Kind: "queue", Name: "orders", Action: "update", Changes: []wire.PlanFieldChange{{Field: "max_receive_count", Old: "5", New: "3"}}},
		{Kind: "queue", Name: "old", Action: "delete", Messages: 12}}},
		`{"app":"shop","steps":[{"kind":"queue","name":"orders","action":"update","changes":[{"field":"max_receive_count","old":"5","new":"3"}]},{"kind":"queue","name":"old","action":"delete","messages":12}],"applied":true}`},
	{"PlanRequest", wire.PlanRequest{Manifest: "queues: {orders: {}}", Modules: map[string]string{"f": "ab"}, HookSecrets: map[string]int{"gh": 1}, Force: true},
		`{"manifest":"queues: {orders: {}}","modules":{"f":"ab"},"hook_secrets":{"gh":1},"force":true}`},
}

func TestGoldenJSON(t *testing.T) {
	t.Parallel()
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(g.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != g.json {
				t.Errorf("encoded\n got %s\nwant %s", b, g.json)
			}
			back := reflect.New(reflect.TypeOf(g.v))
			if err := json.Unmarshal([]byte(g.json), back.Interface()); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got := back.Elem().Interface(); !reflect.DeepEqual(got, g.v) {
				t.Errorf("decoded\n got %#v\nwant %#v", got, g.v)
			}
		})
	}
}

// Every exported type has a golden.
func TestGoldenCoversEveryType(t *testing.T) {
	t.Parallel()
	have := map[string]bool{}
	var walk func(reflect.Type)
	walk = func(rt reflect.Type) {
		switch rt.Kind() {
		case reflect.Pointer, reflect.Slice:
			walk(rt.Elem())
		case reflect.Struct:
			if rt.PkgPath() != reflect.TypeOf(wire.Message{}).PkgPath() || have[rt.Name()] {
				return
			}
			have[rt.Name()] = true
			for i := range rt.NumField() {
				walk(rt.Field(i).Type)
			}
		}
	}
	for _, g := range goldens {
		walk(reflect.TypeOf(g.v))
	}
	for _, name := range []string{"ErrorResponse", "ErrorBody", "Message", "DeadLetter", "MessageList", "DeadLetterList",
		"SendResult", "SendBatchResult", "SendEntry", "SendEntriesRequest", "ReceiveRequest", "VisibilityRequest", "PurgeResult", "RedriveRequest", "RedriveResult",
		"Queue", "QueueStats", "QueueList", "QueueSettings", "CreateQueueRequest", "MinuteStats", "MinuteStatsList",
		"Function", "FunctionVersion", "FunctionList", "Deployment", "SetAliasRequest", "RollbackRequest", "RollbackResult",
		"Trigger", "TriggerInfo", "TriggerList", "PutTriggerResult", "Invocation", "InvocationList",
		"Key", "KeyList", "CreateKeyRequest", "NewKey", "Hook", "CreateHookRequest", "CreateHookResult", "HookInfo", "HookList", "WebhookResult",
		"AppList", "AppSummary", "App", "AppResource", "DeployState", "DeployPlan", "PlanStep", "PlanFieldChange", "PlanRequest"} {
		if !have[name] {
			t.Errorf("no golden JSON for wire.%s", name)
		}
	}
}

// jsonNames returns the JSON names of a struct type's fields.
func jsonNames(v any) []string {
	rt := reflect.TypeOf(v)
	var names []string
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// What a client holds of a trigger or a hook is what the server lists of
// it, under the same names; what it sends is part of that.
func TestPutAndListedShapesAgree(t *testing.T) {
	t.Parallel()
	if got, want := jsonNames(wire.Trigger{}), jsonNames(wire.TriggerInfo{}); !slices.Equal(got, want) {
		t.Errorf("Trigger has JSON names %v, TriggerInfo %v", got, want)
	}
	hook := jsonNames(wire.Hook{})
	for _, shape := range []any{wire.HookInfo{}, wire.CreateHookRequest{}} {
		for _, n := range jsonNames(shape) {
			if !slices.Contains(hook, n) {
				t.Errorf("%T has %q, which Hook lacks", shape, n)
			}
		}
	}
}

// A listed trigger and hook decode into what a client holds without loss.
func TestListedDecodesIntoHeld(t *testing.T) {
	t.Parallel()
	info := wire.TriggerInfo{Name: "t", Kind: "queue", Function: "f", Alias: "live", Queue: "q", DLQ: true, BatchSize: 10,
		BatchWindowMS: 5, Concurrency: 1, AckPolicy: "ack", BackoffInitialMS: 1, BackoffMaxMS: 2, LeaseExtension: true,
		CronSpec: "* * * * *", Timezone: "UTC", EnqueueBody: json.RawMessage(`{}`), Source: "api", UpdatedAt: t0}
	b, _ := json.Marshal(info)
	var held wire.Trigger
	if err := json.Unmarshal(b, &held); err != nil {
		t.Fatal(err)
	}
	want := wire.Trigger{Name: "t", Kind: "queue", Function: "f", Alias: "live", Queue: "q", DLQ: true, BatchSize: 10,
		BatchWindowMS: 5, Concurrency: 1, AckPolicy: "ack", BackoffInitialMS: 1, BackoffMaxMS: 2, LeaseExtension: ptr(true),
		CronSpec: "* * * * *", Timezone: "UTC", EnqueueBody: json.RawMessage(`{}`), Enabled: ptr(false), Source: "api", UpdatedAt: t0}
	if !reflect.DeepEqual(held, want) {
		t.Errorf("listed trigger decoded\n got %#v\nwant %#v", held, want)
	}

	hi := wire.HookInfo{Name: "h", Queue: "q", Verify: "github", SecretCount: 2, Source: "manifest", CreatedAt: t0, UpdatedAt: t1}
	b, _ = json.Marshal(hi)
	var h wire.Hook
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	if want := (wire.Hook{Name: "h", Queue: "q", Verify: "github", SecretCount: 2, Source: "manifest", CreatedAt: t0, UpdatedAt: t1}); !reflect.DeepEqual(h, want) {
		t.Errorf("listed hook decoded\n got %#v\nwant %#v", h, want)
	}
}

func TestNewKeyString(t *testing.T) {
	t.Parallel()
	if got := (wire.NewKey{ID: "sk_a", Secret: "s"}).String(); got != "sk_a:s" {
		t.Errorf("NewKey.String() = %q, want sk_a:s", got)
	}
}
