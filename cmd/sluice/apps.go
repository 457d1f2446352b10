package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/deploy"
)

func runApps(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "apps", []subcommand{
		{"list", "", "list the apps deploys made, with what each owns", appsList},
		{"show", "APP", "show the queues (with their messages), functions, triggers and hooks of an app", appsShow},
		{"delete", "APP [--force] [--dry-run]", "delete everything an app owns (queues holding messages only with --force)", appsDelete},
	}, args, stdout, stderr)
}

func appsList(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("apps list", "")
	_, c, err := f.start(args, stdout)
	if err != nil {
		return err
	}
	apps, err := c.Apps.List(ctx)
	if err != nil {
		return err
	}
	return f.output(stdout, map[string][]client.AppSummary{"apps": apps}, func(w io.Writer) error {
		if len(apps) == 0 {
			_, err := fmt.Fprintln(w, "no apps (`sluice deploy -f sluice.yaml` deploys one: its `app:`, else its folder's name)")
			return err
		}
		rows := make([][]string, len(apps))
		for i, a := range apps {
			rows[i] = []string{a.Name, strconv.Itoa(a.Queues), strconv.Itoa(a.Functions), strconv.Itoa(a.Triggers), strconv.Itoa(a.Hooks)}
		}
		return table(w, "APP\tQUEUES\tFUNCTIONS\tTRIGGERS\tHOOKS", rows)
	})
}

func appsShow(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("apps show", "APP")
	pos, c, err := f.start(args, stdout, "APP")
	if err != nil {
		return err
	}
	app, err := c.Apps.Get(ctx, pos[0])
	if err != nil {
		return err
	}
	return f.output(stdout, app, func(w io.Writer) error {
		fmt.Fprintf(w, "app %s\n", app.Name)
		rows := make([][]string, len(app.Resources))
		for i, r := range app.Resources {
			msgs := ""
			if r.Messages != nil {
				msgs = strconv.FormatInt(*r.Messages, 10)
			}
			rows[i] = []string{r.Kind, r.Name, msgs}
		}
		return table(w, "KIND\tNAME\tMESSAGES", rows)
	})
}

func appsDelete(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("apps delete", "APP [--force] [--dry-run]")
	force := f.Bool("force", false, "delete queues that still hold messages (they are lost)")
	dryRun := f.Bool("dry-run", false, "print what would be deleted and change nothing")
	pos, c, err := f.start(args, stdout, "APP")
	if err != nil {
		return err
	}
	plan, err := c.Apps.Delete(ctx, pos[0], *force, *dryRun)
	if err != nil {
		return err
	}
	return f.output(stdout, plan, func(w io.Writer) error {
		deploy.PlanFromWire(plan).Print(w)
		if *dryRun {
			_, err := fmt.Fprintf(w, "dry run: nothing was changed; run without --dry-run to delete app %s\n", plan.App)
			return err
		}
		_, err := fmt.Fprintf(w, "deleted app %s\n", plan.App)
		return err
	})
}
