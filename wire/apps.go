package wire

// AppResource is one queue, function, trigger or hook with the app that
// owns it ("" = none: made by hand). Fields, in a deploy state, are its
// settings as a deploy plan compares them (function env values only as a
// digest); Messages, for a queue in GET .../apps/{app}, counts its
// messages and dead letters.
type AppResource struct {
	Kind     string            `json:"kind"`
	Name     string            `json:"name"`
	App      string            `json:"app"`
	Fields   map[string]string `json:"fields,omitempty"`
	Messages *int64            `json:"messages,omitempty"`
}

// DeployState answers GET /v1/accounts/{a}/deploy/state: every resource
// of the account with its app and fields, and the topics, which a deploy
// plans against.
type DeployState struct {
	Resources []AppResource `json:"resources"`
	Topics    []Topic       `json:"topics"`
}

// AppSummary counts the resources of one app.
type AppSummary struct {
	Name      string `json:"name"`
	Queues    int    `json:"queues"`
	Functions int    `json:"functions"`
	Triggers  int    `json:"triggers"`
	Hooks     int    `json:"hooks"`
}

// AppList answers GET /v1/accounts/{a}/apps.
type AppList struct {
	Apps []AppSummary `json:"apps"`
}

// App answers GET /v1/accounts/{a}/apps/{app}: its resources by kind and
// name.
type App struct {
	Name      string        `json:"name"`
	Resources []AppResource `json:"resources"`
}

// PlanFieldChange is one field a plan step changes.
type PlanFieldChange struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

// PlanStep is what a deploy does to one resource: action create,
// update, delete or unchanged; Messages is what the delete of a queue
// loses.
type PlanStep struct {
	Kind     string            `json:"kind"`
	Name     string            `json:"name"`
	Action   string            `json:"action"`
	Changes  []PlanFieldChange `json:"changes,omitempty"`
	Messages int64             `json:"messages,omitempty"`
}

// DeployPlan answers DELETE /v1/accounts/{a}/apps/{app} (and its
// dry_run): the steps of the app's plan, and whether they were applied.
type DeployPlan struct {
	App     string     `json:"app"`
	Steps   []PlanStep `json:"steps"`
	Applied bool       `json:"applied"`
}

// PlanRequest is the body of POST /v1/accounts/{a}/apps/{app}/plan: the
// manifest (sluice.yaml as YAML or JSON text; its `app:`, if any, must be
// the path's), each function's module as the hex SHA-256 of its bytes
// (modules are built by the deployer, never by the server), and how many
// secrets each hook has (secrets stay with the deployer). Force plans
// deleting queues that hold messages instead of refusing.
type PlanRequest struct {
	Manifest    string            `json:"manifest"`
	Modules     map[string]string `json:"modules"`
	HookSecrets map[string]int    `json:"hook_secrets,omitempty"`
	Force       bool              `json:"force,omitempty"`
}
