// Command abi-probe is the guest of docs/abi_test.go: it copies the input
// document it reads on stdin to stderr, so the test can check what the
// runtime really sends, and writes $OUTPUT to stdout as its output.
package main

import (
	"io"
	"os"
)

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		os.Exit(1)
	}
	os.Stderr.Write(in)
	os.Stdout.WriteString(os.Getenv("OUTPUT"))
}
