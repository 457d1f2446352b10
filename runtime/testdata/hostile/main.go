// Command hostile misbehaves on demand, for the runtime's tests and the
// reliability suite. The first message's body picks what it does:
// {"do": "ack" | "loop" | "sleep" | "membomb" | "recurse" | "stdout" |
// "stderr" | "badjson" | "unknown" | "exit" | "panic" | "trap" |
// "bigresult" | "env" | "nanny" | "started" | "hold"}; "exit" takes an
// optional "code" (the status, as an int32); "hold" keeps "mib" MiB for
// the instance's life and acks; "started" fails the message with
// "started=N", N the Unix nanoseconds the program started at. Build it with internal/wasmbuild as
// "runtime/testdata/hostile", in either mode.
package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unsafe"

	"github.com/sluicehq/sluice/sdk"
)

var sink [][]byte

// startedAt is read when the Go runtime starts the program, before main.
var startedAt = time.Now()

//go:noinline
func recurse(n int) int {
	var pad [64]byte
	pad[n%64] = byte(n)
	return recurse(n+1) + int(pad[0])
}

func main() {
	sdk.Handle(func(ctx sdk.Context, b sdk.Batch) sdk.Result {
		if len(b.Messages) == 0 {
			return sdk.Result{}
		}
		var cmd struct {
			Do   string `json:"do"`
			Code int    `json:"code"` // the status "exit" exits with, 3 if zero
			MiB  int    `json:"mib"`  // what "hold" keeps
		}
		_ = b.Messages[0].Decode(&cmd)
		switch cmd.Do {
		case "loop":
			for {
			}
		case "sleep":
			time.Sleep(time.Hour)
		case "membomb":
			for { // touch every page, so the memory is really used
				chunk := make([]byte, 1<<20)
				for i := 0; i < len(chunk); i += 4096 {
					chunk[i] = 1
				}
				sink = append(sink, chunk)
			}
		case "hold": // keep mib MiB, touched, for the instance's life
			chunk := make([]byte, cmd.MiB<<20)
			for i := 0; i < len(chunk); i += 4096 {
				chunk[i] = 1
			}
			sink = append(sink, chunk)
		case "recurse":
			recurse(0)
		case "stdout":
			chunk := []byte(strings.Repeat("x", 64<<10))
			for {
				os.Stdout.Write(chunk)
			}
		case "stderr":
			for i := range 20000 {
				fmt.Fprintf(os.Stderr, "noise line %d %s\n", i, strings.Repeat("y", 40))
			}
		case "badjson":
			os.Stdout.Write([]byte(`{"batchItemFailures": [`))
			os.Exit(0)
		case "unknown":
			return sdk.Retry("no-such-id", time.Second, errors.New("not in this batch"))
		case "exit":
			if cmd.Code != 0 {
				os.Exit(cmd.Code)
			}
			os.Exit(3)
		case "panic":
			panic("hostile: boom")
		case "trap":
			// An address past the end of linear memory: a wasm trap, not a
			// Go panic.
			p := (*byte)(unsafe.Pointer(uintptr(0xfffffff0)))
			*p = 1
		case "bigresult":
			var res sdk.Result
			long := errors.New(strings.Repeat("z", 2048))
			for range 1000 {
				res.Retry(b.Messages[0].ID, 0, long)
			}
			return res
		case "started":
			return sdk.Permanent(b.Messages[0].ID, fmt.Errorf("started=%d", startedAt.UnixNano()))
		case "env":
			_, ferr := os.ReadFile("/etc/hostname")
			entries, derr := os.ReadDir("/")
			var r1, r2 [16]byte
			_, _ = rand.Read(r1[:])
			_, _ = rand.Read(r2[:])
			clock := time.Now().After(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			return sdk.Permanent(b.Messages[0].ID, fmt.Errorf("env=%s fs=%v dir=%d/%v clock=%v rand=%v",
				strings.Join(os.Environ(), ","), ferr != nil, len(entries), derr != nil, clock, r1 != r2 && r1 != [16]byte{}))
		}
		ctx.Log("acked", "messages", len(b.Messages))
		return sdk.Result{}
	})
}
