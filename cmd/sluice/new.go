package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/cmd/sluice/internal/scaffold"
	"github.com/sluicehq/sluice/pgqueue"
)

// runNew scaffolds the project of a new function: `sluice new NAME
// [--lang go|c|rust|assemblyscript] [--dir DIR]`.
func runNew(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("new", stderr)
	lang := fs.String("lang", "go", "the language: "+strings.Join(scaffold.Languages, ", "))
	dir := fs.String("dir", "", "the project folder (default: ./NAME); must not exist or be empty")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sluice new NAME [--lang go|c|rust|assemblyscript] [--dir DIR]")
		fmt.Fprintln(stderr, "\nWrites a project for function NAME: its source, build.sh, a copy of the guest SDK,")
		fmt.Fprintln(stderr, "sluice.yaml (a queue NAME, the function, its trigger), batch.json for `sluice invoke` and a README.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	positional, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return err
	} else if err != nil {
		return usageErrorf("%v", err)
	}
	if len(positional) != 1 {
		return usageErrorf("want exactly one NAME (the function's), got %d", len(positional))
	}
	name := positional[0]
	if !pgqueue.ValidName(name) {
		return usageErrorf("name %q: use 1-80 characters from A-Z a-z 0-9 _ -", name)
	}
	l, err := scaffold.Lang(*lang)
	if err != nil {
		return usageErrorf("--lang: %v", err)
	}
	if *dir == "" {
		*dir = name
	}
	files, err := scaffold.Write(*dir, name, l)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s, a %s function, to %s:\n", name, l, *dir)
	for _, f := range files {
		if !strings.HasPrefix(f, "sluice-sdk/") {
			fmt.Fprintf(stdout, "  %s\n", filepath.FromSlash(f))
		}
	}
	fmt.Fprintf(stdout, "  sluice-sdk/ (a copy of the %s guest SDK)\n", l)
	fmt.Fprintf(stdout, "\nnext:\n  cd %s\n  ./build.sh && sluice invoke %s.wasm --input batch.json\n  sluice deploy\n  sluice mq send %s --body '{\"text\": \"hello\"}'\n", *dir, name, name)
	return nil
}
