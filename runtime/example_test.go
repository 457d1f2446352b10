package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/runtime"
)

// Example runs the flaky example function on a batch of two messages: the
// first asks to fail until its second delivery, the second succeeds.
func Example() {
	ctx := context.Background()
	// Compiled machine code is kept in a folder across processes (here the
	// one the test suite shares), so a module compiles once per machine.
	cache, err := wasmbuild.CompiledCacheDir()
	if err != nil {
		panic(err)
	}
	rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: cache})
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)

	path, err := wasmbuild.Build(ctx, "flaky", wasmbuild.Reactor)
	if err != nil {
		panic(err)
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	fn, err := rt.Load(ctx, wasm, runtime.FunctionConfig{
		Name: "flaky", Version: 1,
		Env: map[string]string{"FLAKY_RETRY_SECONDS": "30"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("kind:", fn.Kind())

	res, err := fn.Invoke(ctx, runtime.Invocation{
		ID:      "inv-1",
		Trigger: runtime.Trigger{Type: "queue", Source: "orders"},
		Messages: []runtime.Message{
			{ID: "41", Attempt: 1, Body: json.RawMessage(`{"fail_until_attempt":2}`)},
			{ID: "42", Attempt: 1, Body: json.RawMessage(`{"order":42}`)},
		},
	})
	if err != nil {
		panic(err) // a host problem, not the function's
	}
	fmt.Println("batch failed:", res.Failure != nil)
	for _, m := range res.Messages {
		fmt.Println(m.ID, m.Outcome, m.RetryAfter, m.Error)
	}
	// Output:
	// kind: reactor
	// batch failed: false
	// 41 retry 30s flaky: attempt 1 of 2 fails
	// 42 acked 0s
}
