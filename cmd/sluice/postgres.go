package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/sluicehq/sluice/internal/localpg"
)

// defaultPostgresDir is where `sluice dev` and `sluice postgres` keep the
// local development cluster.
const defaultPostgresDir = ".sluice/postgres"

func runPostgres(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("postgres", stderr)
	dir := fs.String("dir", defaultPostgresDir, "folder of the private cluster")
	durable := fs.Bool("durable", true, "keep fsync on (turn off for throwaway test clusters)")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "usage: sluice postgres start|stop|url [--dir DIR] [--durable=false]")
		fmt.Fprintln(w, "  start  initialise (if needed) and start the cluster, then print its URL")
		fmt.Fprintln(w, "  stop   stop the cluster")
		fmt.Fprintln(w, "  url    print the cluster's connection URL")
		fs.PrintDefaults()
	}
	if len(args) == 0 {
		fs.Usage()
		return usageErrorf("missing action: start, stop or url")
	}
	if isHelp(args[0]) {
		fs.SetOutput(stdout)
		fs.Usage()
		return flag.ErrHelp
	}
	action := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	c, err := localpg.Open(*dir)
	if err != nil {
		return err
	}
	switch action {
	case "start":
		if err := c.Start(ctx, localpg.Options{Durable: *durable}); err != nil {
			return err
		}
	case "stop":
		return c.Stop(ctx)
	case "url":
	default:
		return usageErrorf("unknown action %q: use start, stop or url", action)
	}
	_, err = fmt.Fprintln(stdout, c.URL())
	return err
}
