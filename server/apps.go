package server

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/sluicehq/sluice/deploy"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/wire"
)

// Apps over HTTP: what each app (a manifest's `app:`) owns, deleting an
// app, and what the HTTP deploy target (deploy.APITarget) needs to plan
// and record ownership. Every route acts on the whole account, so it needs
// a key not limited to some queues, with mq:admin; those that change or
// reveal functions need functions:deploy too.

// appCall checks what every apps route needs beyond its scope.
func appCall(c *call, deploys bool) error {
	if !c.key.allQueues() {
		return errorf(http.StatusForbidden, "forbidden", "access key %s is limited to some queues: apps span the account, use a key for every queue", c.key.id)
	}
	if deploys {
		return c.require(ScopeDeploy)
	}
	return nil
}

func (a *api) deployState(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := appCall(c, true); err != nil {
		return err
	}
	st, err := a.s.deployTarget(c.account).State(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, deploy.WireState(st))
	return nil
}

func (a *api) listApps(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := appCall(c, false); err != nil {
		return err
	}
	st, err := a.s.deployTarget(c.account).State(r.Context())
	if err != nil {
		return err
	}
	apps := map[string]*wire.AppSummary{}
	var names []string
	for _, res := range deploy.WireState(st).Resources {
		if res.App == "" {
			continue
		}
		s, ok := apps[res.App]
		if !ok {
			s = &wire.AppSummary{Name: res.App}
			apps[res.App] = s
			names = append(names, res.App)
		}
		switch res.Kind {
		case deploy.KindQueue:
			s.Queues++
		case deploy.KindFunction:
			s.Functions++
		case deploy.KindTrigger:
			s.Triggers++
		case deploy.KindHook:
			s.Hooks++
		}
	}
	out := wire.AppList{Apps: []wire.AppSummary{}}
	slices.Sort(names)
	for _, n := range names {
		out.Apps = append(out.Apps, *apps[n])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) getApp(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := appCall(c, false); err != nil {
		return err
	}
	app := r.PathValue("app")
	if !pgqueue.ValidName(app) {
		return errorf(http.StatusBadRequest, "invalid_name", "invalid app name %q: use 1-80 characters from A-Z a-z 0-9 _ -", truncate(app, 90))
	}
	st, err := a.s.deployTarget(c.account).State(r.Context())
	if err != nil {
		return err
	}
	give, err := a.holdStatsRead(r.Context(), c.account)
	if err != nil {
		return err
	}
	defer give()
	out := wire.App{Name: app, Resources: []wire.AppResource{}}
	for _, res := range deploy.WireState(st).Resources {
		if res.App != app {
			continue
		}
		res.Fields = nil
		if res.Kind == deploy.KindQueue {
			n, err := a.s.queue.MessageCount(r.Context(), c.account, res.Name)
			if err != nil && !errors.Is(err, pgqueue.ErrQueueNotFound) {
				return err
			}
			res.Messages = &n
		}
		out.Resources = append(out.Resources, res)
	}
	if len(out.Resources) == 0 {
		return errorf(http.StatusNotFound, "not_found", "no app %s in account %s: `sluice apps list` lists the apps", app, c.account)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) deleteApp(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := appCall(c, true); err != nil {
		return err
	}
	app := r.PathValue("app")
	force, err := boolParam(r, "force")
	if err != nil {
		return err
	}
	dryRun, err := boolParam(r, "dry_run")
	if err != nil {
		return err
	}
	give, err := a.holdStatsRead(r.Context(), c.account) // the plan counts the app's queues' messages
	if err != nil {
		return err
	}
	defer give()
	plan, err := a.s.DeleteApp(r.Context(), c.account, app, deploy.Options{Force: force, DryRun: dryRun})
	var loss *deploy.DataLossError
	if errors.As(err, &loss) {
		return errorf(http.StatusConflict, "conflict", "%s", loss.Error())
	}
	if err != nil {
		return err
	}
	if len(plan.Steps) == 0 {
		return errorf(http.StatusNotFound, "not_found", "no app %s in account %s: `sluice apps list` lists the apps", app, c.account)
	}
	writeJSON(w, http.StatusOK, deploy.WirePlan(plan, !dryRun))
	return nil
}

// planApp answers what deploying a manifest as app would do (a dry run:
// nothing changes).
func (a *api) planApp(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := appCall(c, true); err != nil {
		return err
	}
	app := r.PathValue("app")
	if !pgqueue.ValidName(app) {
		return errorf(http.StatusBadRequest, "invalid_name", "invalid app name %q: use 1-80 characters from A-Z a-z 0-9 _ -", truncate(app, 90))
	}
	var req wire.PlanRequest
	body, err := readJSON(w, r, false)
	if err != nil {
		return err
	}
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	m, err := manifest.Parse([]byte(req.Manifest))
	if err != nil {
		return badRequest("%s", err)
	}
	if m.App != "" && m.App != app {
		return badRequest("the manifest is app %s, not %s: plan it at .../apps/%s/plan", m.App, app, m.App)
	}
	m.App = app
	for name := range m.Functions {
		if b, err := hex.DecodeString(req.Modules[name]); err != nil || len(b) != 32 {
			return badRequest("modules: function %s: %q is not the 64 hex digits of its module's SHA-256", name, truncate(req.Modules[name], 70))
		}
	}
	give, err := a.holdStatsRead(r.Context(), c.account) // the plan counts the messages of queues it would delete
	if err != nil {
		return err
	}
	defer give()
	plan, err := deploy.PlanManifest(r.Context(), a.s.deployTarget(c.account), c.account, m, req.Modules, req.HookSecrets, deploy.Options{Force: req.Force})
	var loss *deploy.DataLossError
	var clash *deploy.ClashError
	switch {
	case errors.As(err, &loss):
		return errorf(http.StatusConflict, "conflict", "%s", loss.Error())
	case errors.As(err, &clash):
		return errorf(http.StatusConflict, "conflict", "%s", clash.Error())
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusOK, deploy.WirePlan(plan, false))
	return nil
}

func (a *api) setResourceApp(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := appCall(c, true); err != nil {
		return err
	}
	app := r.PathValue("app")
	if !pgqueue.ValidName(app) {
		return errorf(http.StatusBadRequest, "invalid_name", "invalid app name %q: use 1-80 characters from A-Z a-z 0-9 _ -", truncate(app, 90))
	}
	kind := map[string]string{"queues": deploy.KindQueue, "functions": deploy.KindFunction, "triggers": deploy.KindTrigger, "hooks": deploy.KindHook}[r.PathValue("kind")]
	if kind == "" {
		return errorf(http.StatusNotFound, "not_found", "no resource kind %q: use queues, functions, triggers or hooks", truncate(r.PathValue("kind"), 40))
	}
	if err := a.s.deployTarget(c.account).SetApp(r.Context(), kind, r.PathValue("name"), app); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) deleteFunction(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := c.accountWide("functions serve"); err != nil {
		return err
	}
	if err := a.s.registry.Delete(r.Context(), c.account, r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// DeleteApp deletes every resource of app in account (see deploy.Delete).
func (s *Server) DeleteApp(ctx context.Context, account, app string, opts deploy.Options) (deploy.Plan, error) {
	if !pgqueue.ValidName(app) {
		return deploy.Plan{App: app}, errorf(http.StatusBadRequest, "invalid_name", "invalid app name %q: use 1-80 characters from A-Z a-z 0-9 _ -", truncate(app, 90))
	}
	return deploy.Delete(ctx, s.deployTarget(account), app, opts)
}

func boolParam(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badRequest("invalid %s %q: use true or false", name, truncate(v, 20))
	}
	return b, nil
}
