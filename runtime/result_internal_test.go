package runtime

import (
	"strings"
	"testing"
	"time"
)

func TestOutcomesEmits(t *testing.T) {
	t.Parallel()
	inv := &Invocation{Messages: []Message{{ID: "1"}, {ID: "2"}}}
	res, emits, f := outcomes(inv, []byte(`{"batchItemFailures":[{"itemIdentifier":"2"}],
		"emit":[{"queue":"shipped","body":{"n":1},"delay_seconds":3,"for":"1"},{"topic":"audit","body":"done"}]}`))
	if f != nil {
		t.Fatal(f)
	}
	if res[0].Outcome != Acked || res[1].Outcome != Retry {
		t.Fatalf("outcomes = %+v", res)
	}
	if len(emits) != 2 || emits[0].Queue != "shipped" || emits[0].For != "1" || emits[0].Delay != 3*time.Second ||
		emits[1].Target() != "topic audit" || string(emits[1].Body) != `"done"` {
		t.Fatalf("emits = %+v", emits)
	}
	for _, tc := range []struct{ out, want string }{
		{`{"emit":[{"queue":"a","body":1,"for":"9"}]}`, `invalid_output: emit[0] is for "9", which is not in the batch`},
		{`{"emit":[{"queue":"a","body":1,"group":""}]}`, "invalid_output: emit[0]: group of 0 characters"},
	} {
		_, emits, f := outcomes(inv, []byte(tc.out))
		if f == nil || f.Kind != FailureInvalidOutput || !strings.HasPrefix(f.Message, tc.want) || emits != nil {
			t.Errorf("outcomes(%s) = %v, %v; want %s", tc.out, emits, f, tc.want)
		}
	}
}
