package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/sluicehq/sluice/wire"
)

// AppsService reads and deletes the apps of the client's account: what
// `sluice deploy` made from each manifest (scope mq:admin; deleting also
// needs functions:deploy).
type AppsService struct{ c *Client }

// AppSummary counts the resources of one app.
type AppSummary = wire.AppSummary

// App is one app with its resources.
type App = wire.App

// AppResource is one resource with the app that owns it.
type AppResource = wire.AppResource

// DeployPlan is the plan of a deploy or an app's deletion.
type DeployPlan = wire.DeployPlan

// DeployState is every resource of the account with its app and fields.
type DeployState = wire.DeployState

// List returns the apps of the account, by name.
func (s *AppsService) List(ctx context.Context) ([]AppSummary, error) {
	var out wire.AppList
	err := s.c.do(ctx, request{method: http.MethodGet, path: s.c.managePath("apps")}, &out)
	return out.Apps, err
}

// Get returns app with its resources (queues with their message counts).
func (s *AppsService) Get(ctx context.Context, app string) (App, error) {
	var out App
	if err := checkName("app", app); err != nil {
		return out, err
	}
	err := s.c.do(ctx, request{method: http.MethodGet, path: s.c.managePath("apps", app)}, &out)
	return out, err
}

// Delete deletes every resource of app and returns the plan it applied.
// Queues still holding messages are deleted only with force (else a
// conflict error says how many messages); with dryRun nothing changes
// and the plan is returned.
func (s *AppsService) Delete(ctx context.Context, app string, force, dryRun bool) (DeployPlan, error) {
	var out DeployPlan
	if err := checkName("app", app); err != nil {
		return out, err
	}
	q := url.Values{}
	if force {
		q.Set("force", "true")
	}
	if dryRun {
		q.Set("dry_run", "true")
	}
	err := s.c.do(ctx, request{method: http.MethodDelete, path: s.c.managePath("apps", app), query: q}, &out)
	return out, err
}

// State returns every resource of the account with its app and the
// fields a deploy plan compares, and the topics.
func (s *AppsService) State(ctx context.Context) (DeployState, error) {
	var out DeployState
	err := s.c.do(ctx, request{method: http.MethodGet, path: s.c.managePath("deploy", "state")}, &out)
	return out, err
}

// SetOwner records that app owns the resource kind ("queue", "function",
// "trigger" or "hook") name.
func (s *AppsService) SetOwner(ctx context.Context, app, kind, name string) error {
	if err := checkName("app", app); err != nil {
		return err
	}
	return s.c.do(ctx, request{method: http.MethodPut, path: s.c.managePath("apps", app, kind+"s", name)}, nil)
}

// PlanRequest asks what deploying a manifest as an app would do.
type PlanRequest = wire.PlanRequest

// Plan returns what deploying r.Manifest as app would do, changing
// nothing (scopes mq:admin and functions:deploy).
func (s *AppsService) Plan(ctx context.Context, app string, r PlanRequest) (DeployPlan, error) {
	var out DeployPlan
	if err := checkName("app", app); err != nil {
		return out, err
	}
	err := s.c.do(ctx, request{method: http.MethodPost, path: s.c.managePath("apps", app, "plan"), body: r}, &out)
	return out, err
}
