package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/wire"
)

// Deploys compile outside the request that uploads them. Compiling a
// module (the registry's validation: the runtime loads it) takes from
// milliseconds (a cached module) to many seconds (a first Go module on a
// busy machine), longer than a client should hold a request open. So
// POST .../versions starts the deploy, waits up to Config.DeployWait for
// it and answers 201 with the result when it finished, else 202 with
// status "compiling" and an id that GET .../deployments/{id} reports on
// until the deploy is ready or failed. The registry's semantics are
// unchanged: a module that cannot load is refused with its error and
// nothing is stored, so the alias never moves to it.

const (
	// defaultDeployWait is how long a deploy request waits for the
	// compilation before answering 202.
	defaultDeployWait = time.Second
	// deployTimeout bounds one deploy, compilation included.
	deployTimeout = 10 * time.Minute
	// deployKeep is how long a finished deploy's status stays readable.
	deployKeep = 15 * time.Minute
)

// deployJob is one deploy running or finished in this process.
type deployJob struct {
	id, account, function, sha256 string
	done                          chan struct{}
	// set once done is closed
	result   functions.Deployment
	err      error
	finished time.Time
}

// deployJobs holds the deploys of this process by id.
type deployJobs struct {
	mu   sync.Mutex
	jobs map[string]*deployJob
	// slots holds a slot of kind slotDeploy per deploy running.
	slots *accountSlots
}

// start runs deploy in the background as a new job of account, unless
// account has maxAccountDeploys deploys running already (in any process
// serving the database): then it is a 429.
func (d *deployJobs) start(ctx context.Context, account, function string, module []byte, deploy func(ctx context.Context) (functions.Deployment, error)) (*deployJob, error) {
	slot, err := d.slots.hold(ctx, account, slotDeploy, maxAccountDeploys, 5, "deploys compiling", "wait for one to end (GET .../deployments/{id}), then retry")
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(module)
	j := &deployJob{id: randomID(), account: account, function: function,
		sha256: hex.EncodeToString(sum[:]), done: make(chan struct{})}
	d.mu.Lock()
	if d.jobs == nil {
		d.jobs = map[string]*deployJob{}
	}
	for id, old := range d.jobs {
		if !old.finished.IsZero() && time.Since(old.finished) > deployKeep {
			delete(d.jobs, id)
		}
	}
	d.jobs[j.id] = j
	d.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), deployTimeout)
		defer cancel()
		res, err := deploy(ctx)
		d.mu.Lock()
		j.result, j.err, j.finished = res, err, time.Now()
		d.mu.Unlock()
		slot.give() // before done: a deploy seen ended holds no slot
		close(j.done)
	}()
	return j, nil
}

// get returns the job id of account and function, if this process has it.
func (d *deployJobs) get(account, function, id string) (*deployJob, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	j, ok := d.jobs[id]
	return j, ok && j.account == account && j.function == function
}

// status is the job's answer: its status, and its result or error.
func (a *api) deployStatus(j *deployJob) wire.Deployment {
	select {
	case <-j.done:
	default:
		return wire.Deployment{Status: wire.DeployCompiling, ID: j.id, SHA256: j.sha256}
	}
	if j.err != nil {
		e := a.toAPIError(j.err)
		return wire.Deployment{Status: wire.DeployFailed, ID: j.id, SHA256: j.sha256,
			Error: &wire.ErrorBody{Code: e.Code, Message: e.Message}}
	}
	d := j.result
	return wire.Deployment{Status: wire.DeployReady, ID: j.id, Version: d.Version.Number, Created: d.Created,
		AliasMoved: d.AliasMoved, SHA256: d.Version.SHA256}
}

func (a *api) deployFunction(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := c.accountWide("functions serve"); err != nil {
		return err
	}
	cfg, alias, err := decodeDeploy(r.URL.Query())
	if err != nil {
		return err
	}
	if err := a.s.checkGuestMemory(r.Context(), c.account, cfg.MemoryMiB); err != nil {
		return err
	}
	module, err := readBody(w, r, "application/wasm", maxModuleBytes, false)
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	dryRun, err := boolParam(r, "dry_run")
	if err != nil {
		return err
	}
	if dryRun {
		// What the deploy would do, storing and compiling nothing.
		sum := sha256.Sum256(module)
		d, err := a.s.registry.PlanDeploy(r.Context(), c.account, name, hex.EncodeToString(sum[:]), cfg, alias)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, wire.Deployment{Status: wire.DeployDryRun, Version: d.Version.Number, Created: d.Created,
			AliasMoved: d.AliasMoved, SHA256: d.Version.SHA256})
		return nil
	}
	// Checked now, before the module compiles, and again as it is stored.
	limits, err := a.deployLimits(r.Context(), c.account)
	if err != nil {
		return err
	}
	if err := a.s.registry.CheckLimits(r.Context(), limits, c.account, name, module); err != nil {
		return err
	}
	j, err := a.deploys.start(r.Context(), c.account, name, module, func(ctx context.Context) (functions.Deployment, error) {
		return a.s.registry.DeployWithin(ctx, limits, c.account, name, module, cfg, alias)
	})
	if err != nil {
		return err
	}
	wait := a.s.cfg.DeployWait
	if wait == 0 {
		wait = defaultDeployWait
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-j.done:
		case <-t.C:
		case <-r.Context().Done():
		}
	}
	done := j.done
	if wait < 0 {
		done = nil // answer 202 at once, even if the deploy has already ended
	}
	select {
	case <-done:
		if j.err != nil {
			return j.err
		}
		writeJSON(w, http.StatusCreated, a.deployStatus(j))
	default:
		w.Header().Set("Location", r.URL.Path[:len(r.URL.Path)-len("versions")]+"deployments/"+j.id)
		writeJSON(w, http.StatusAccepted, a.deployStatus(j))
	}
	return nil
}

// getDeployment reports on a deploy this process started.
func (a *api) getDeployment(w http.ResponseWriter, r *http.Request, c *call) error {
	j, ok := a.deploys.get(c.account, r.PathValue("name"), r.PathValue("id"))
	if !ok {
		return errorf(http.StatusNotFound, "not_found", "no deploy %s of function %s on this server (finished deploys are kept %s; a server restart forgets them)",
			r.PathValue("id"), r.PathValue("name"), deployKeep)
	}
	writeJSON(w, http.StatusOK, a.deployStatus(j))
	return nil
}
