package server

import (
	"context"

	"github.com/sluicehq/sluice/deploy"
	"github.com/sluicehq/sluice/functions/manifest"
)

// Apply makes account match the manifest on this server's database, with
// deploy.DBTarget and the functions' modules from modules; see
// deploy.Apply. The server never builds a module itself.
func (s *Server) Apply(ctx context.Context, account string, m *manifest.Manifest, modules deploy.Modules, opts deploy.Options) (deploy.Plan, error) {
	return deploy.Apply(ctx, s.deployTarget(account), account, m, modules, opts)
}

// DeployTarget is the deploy.Target of account on this server's
// database, for callers that wrap it (the CLI reports progress).
func (s *Server) DeployTarget(account string) deploy.Target { return s.deployTarget(account) }

// deployTarget is the deploy.Target of account on this server's database.
func (s *Server) deployTarget(account string) deploy.Target {
	return deploy.DBTarget(account, deploy.Stores{Queue: s.queue, Registry: s.registry, Triggers: s.triggers, Hooks: deployHooks{s}})
}

// deployHooks is the server's hook API as a deploy.HookStore.
type deployHooks struct{ s *Server }

func (h deployHooks) PutHook(ctx context.Context, account string, hk deploy.Hook) (bool, error) {
	return h.s.PutHook(ctx, account, Hook(hk))
}

func (h deployHooks) ListHooks(ctx context.Context, account string) ([]deploy.HookInfo, error) {
	hs, err := h.s.ListHooks(ctx, account)
	out := make([]deploy.HookInfo, len(hs))
	for i, hk := range hs {
		out[i] = deploy.HookInfo(hk)
	}
	return out, err
}

func (h deployHooks) DeleteHook(ctx context.Context, account, name string) error {
	return h.s.DeleteHook(ctx, account, name)
}

func (h deployHooks) SetHookApp(ctx context.Context, account, name, app string) error {
	return h.s.hooks.SetApp(ctx, account, name, app)
}

func (h deployHooks) HookApps(ctx context.Context, account string) (map[string]string, error) {
	return h.s.hooks.Apps(ctx, account)
}
