package sdk_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// ExampleResult builds the result of a batch in which one message must be
// retried in a minute and another is beyond repair; the rest are acked.
func ExampleResult() {
	var res sdk.Result
	res.Retry("8412", time.Minute, errors.New("smtp 451"))
	res.Permanent("8413", errors.New("no such mailbox"))
	for _, f := range res.Failures {
		fmt.Println(f.ID, f.RetryAfter, f.Permanent, f.Err)
	}
	// Output:
	// 8412 1m0s false smtp 451
	// 8413 0s true no such mailbox
}

// ExampleMessage_Decode decodes a message body into a struct.
func ExampleMessage_Decode() {
	m := sdk.Message{ID: "1", Body: []byte(`{"to":"ada@example.com","subject":"hi"}`)}
	var email struct {
		To      string `json:"to"`
		Subject string `json:"subject"`
	}
	if err := m.Decode(&email); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(email.To, email.Subject)
	// Output: ada@example.com hi
}
