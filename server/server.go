package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/console"
	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/internal/ttlcache"
	"github.com/sluicehq/sluice/kv"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/pgqueue/migrate"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/server/keys"
	"github.com/sluicehq/sluice/server/migrations"
	"github.com/sluicehq/sluice/triggers"
)

// Migrations are every migration line of Sluice, in the order they apply.
var Migrations = migrations.All

// Config configures a Server.
type Config struct {
	// DatabaseURL is the Postgres to run on.
	DatabaseURL string
	// Schema holds Sluice's tables (default "sluice").
	Schema string
	// Migrate applies pending migrations when the server opens.
	Migrate bool
	// HTTPAddr is where the HTTP API listens (e.g. ":8080"); "" serves none.
	HTTPAddr string
	// CacheDir keeps compiled WASM machine code across restarts ("" = the
	// user cache dir's sluice/compiled folder).
	CacheDir string
	// LongGuestCgroup is runtime.Config.LongGuestCgroup: a cgroup (marked
	// idle, or of low weight) that guests running long take their CPU in,
	// so that they cannot take it from a Postgres on the same machine.
	LongGuestCgroup string
	// DenyPrivateOutbound is runtime.Config.DenyPrivateOutbound: no
	// function reaches a loopback, private or link-local address, even
	// one its allow-list names literally (for servers tenants deploy to).
	DenyPrivateOutbound bool
	// PrivateOutboundNetworks is runtime.Config.PrivateOutboundNetworks:
	// under DenyPrivateOutbound, the networks functions may still reach
	// at hosts their allow-list names literally.
	PrivateOutboundNetworks []netip.Prefix
	// NAT64Prefixes is runtime.Config.NAT64Prefixes: the network's own
	// NAT64 translation prefixes, through which functions' connections are
	// checked as the IPv4 addresses inside.
	NAT64Prefixes []netip.Prefix
	// GuestMemory and GuestMemoryPerAccount are runtime.Config's: the
	// bytes of linear memory all functions' instances, and one account's,
	// may hold at once (GuestMemory 0: three quarters of the process's
	// memory, negative: no bound; GuestMemoryPerAccount 0: no bound). A
	// deploy through the API whose memory_mb is over either is refused.
	GuestMemory, GuestMemoryPerAccount int64
	// ShutdownGrace is how long Stop lets running batches finish before
	// releasing their leases (default 30s).
	ShutdownGrace time.Duration
	// MaxConns caps the database pool (default 20; at least 2).
	MaxConns int32
	// Logger receives the server's logs.
	Logger zerolog.Logger
	// WebhookReads bounds the webhook bodies read at once (default 64,
	// so at most 64 MiB of unauthenticated bodies in memory); a delivery
	// beyond it gets 503 with Retry-After.
	WebhookReads int
	// PageReads bounds the peek and dead-letter pages read and answered
	// at once (default 32: each holds up to pgqueue.MaxPageBytes of
	// messages, and its JSON answer about as much again), of which one
	// account holds a quarter at most (one at least); a read beyond gets 429 with
	// Retry-After.
	PageReads int
	// ReceiveBytes bounds the bytes of messages the server's receives
	// hold at once (default 256 MiB), of which one account holds a
	// quarter: a claim holds its queue's max_message_bytes (at least 64
	// KiB) for each message it may take while it runs, then the bodies
	// and headers it took until its answer is written (past what it held,
	// only if that fits too: else its leases go back uncounted, and a
	// receive with delete does not commit). A receive without room waits a
	// second for some, then claims nothing and gets 429 with Retry-After
	// (a long poll goes on waiting, and answers 429 only if its last look
	// found no room).
	ReceiveBytes int64
	// AnswerWriteTimeout bounds how long an answer may take to reach its
	// client once it is ready (default 1 minute): a client that does not
	// read it is cut off and the answer's memory freed. A log stream
	// gets as long for each event.
	AnswerWriteTimeout time.Duration
	// MetricsAddr, when set, is a second listener serving GET /metrics
	// of every account without a key, for the operator's Prometheus (keep
	// it off the internet). The API's own /metrics needs a key with scope
	// metrics:read and shows that key's account only.
	MetricsAddr string
	// MetricsSeriesPerAccount caps the queue and function label values
	// of one account in the metrics (default 100); the series of the
	// others are summed under the label value "~other". Negative: no cap.
	MetricsSeriesPerAccount int
	// Limits bound what each account may create through the HTTP API;
	// zero fields take DefaultLimits. SetAccountLimits overrides them for
	// one account.
	Limits AccountLimits
	// AuthFailuresPerMinute is how many failed authentications a client
	// address may make a minute (and at once) before it gets 429 with
	// Retry-After (default 60; negative: no limit); also how many wrong
	// secrets a key may get before addresses over their budget get 429
	// for it too.
	AuthFailuresPerMinute int
	// Engine tunes the trigger engine; its wiring fields are filled in.
	Engine triggers.Config
	// DeployWait is how long a deploy request (POST .../versions) waits
	// for the module to compile before answering 202 with a status to
	// poll (default 1s; negative: answer 202 at once).
	DeployWait time.Duration
}

// Server is one Sluice process: the sweeper, the trigger engine (queue
// dispatchers and cron) and the HTTP API, over one Postgres pool.
type Server struct {
	cfg Config
	log zerolog.Logger

	pool     *pgxpool.Pool
	queue    *pgqueue.Client
	listener *pgqueue.Listener
	registry *functions.Registry
	triggers *triggers.Store
	runtime  *runtime.Runtime

	invocations *triggers.InvocationLog
	hooks       *triggers.HookStore
	keys        *keys.Store

	engine  *triggers.Engine
	api     *api
	sweeper *pgqueue.Sweeper
	kv      *kv.Stores
	// limitsCache holds accounts' limits for the checks of every
	// key-value write and send (cachedLimits).
	limitsCache *ttlcache.Cache[string, AccountLimits]
	kvSweeps    int // calls of sweepKV, on the sweeper goroutine only
	http        *http.Server
	ln          net.Listener

	metricsHTTP *http.Server
	metricsLn   net.Listener

	stopOnce sync.Once
	stopErr  error
}

// Open connects to the database, applies migrations when asked, and builds
// the server's parts. Nothing runs until Start.
func Open(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.DatabaseURL == "" {
		return nil, errors.New("server: no database URL: set DATABASE_URL")
	}
	if cfg.Schema == "" {
		cfg.Schema = pgqueue.DefaultSchema
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 30 * time.Second
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 20
	}
	if cfg.MaxConns < 2 {
		// exclusive holds one connection while the change it guards runs on another.
		return nil, fmt.Errorf("server: MaxConns %d: use 2 or more (the default is 20)", cfg.MaxConns)
	}
	cfg.Limits = cfg.Limits.withDefaults(DefaultLimits)
	cfg.Limits.GuestMemoryMiB = cfg.GuestMemoryPerAccount >> 20
	if cfg.MetricsSeriesPerAccount == 0 {
		cfg.MetricsSeriesPerAccount = 100
	}
	if cfg.AuthFailuresPerMinute == 0 {
		cfg.AuthFailuresPerMinute = 60
	}
	if cfg.WebhookReads <= 0 {
		cfg.WebhookReads = 64
	}
	if cfg.PageReads <= 0 {
		cfg.PageReads = 32
	}
	if cfg.ReceiveBytes <= 0 {
		cfg.ReceiveBytes = 256 << 20
	}
	if cfg.AnswerWriteTimeout <= 0 {
		cfg.AnswerWriteTimeout = time.Minute
	}
	if cfg.CacheDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		cfg.CacheDir = filepath.Join(dir, "sluice", "compiled")
	}
	pcfg, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("server: database URL: %w", err)
	}
	pcfg.MaxConns = cfg.MaxConns
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("server: connect: %w", err)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, pool: pool, limitsCache: ttlcache.New[string, AccountLimits](limitsCacheTTL, limitsCacheSize)}
	if err := s.open(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) open(ctx context.Context) error {
	cfg := s.cfg
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("server: connect: %w", err)
	}
	if cfg.Migrate {
		if err := migrate.Up(ctx, s.pool, cfg.Schema, Migrations...); err != nil {
			return err
		}
	}
	var err error
	if s.listener, err = pgqueue.NewListener(s.pool, pgqueue.ListenerOptions{
		Schema:  cfg.Schema,
		OnError: func(err error) { s.log.Warn().Err(err).Msg("listener") },
	}); err != nil {
		return err
	}
	if s.queue, err = pgqueue.New(s.pool, pgqueue.Options{Schema: cfg.Schema, Listener: s.listener,
		StoredBytesLimit: s.messageBytesLimit}); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.CacheDir, 0o755); err != nil {
		return fmt.Errorf("server: wasm cache folder: %w", err)
	}
	if s.runtime, err = runtime.New(ctx, runtime.Config{CompilationCacheDir: cfg.CacheDir, Logger: s.log,
		LongGuestCgroup: cfg.LongGuestCgroup, DenyPrivateOutbound: cfg.DenyPrivateOutbound,
		PrivateOutboundNetworks: cfg.PrivateOutboundNetworks, NAT64Prefixes: cfg.NAT64Prefixes,
		GuestMemory: cfg.GuestMemory, GuestMemoryPerAccount: cfg.GuestMemoryPerAccount}); err != nil {
		return err
	}
	if s.registry, err = functions.NewRegistry(s.pool, cfg.Schema, s.validateModule); err != nil {
		return err
	}
	if s.triggers, err = triggers.NewStore(s.pool, cfg.Schema); err != nil {
		return err
	}
	s.invocations = s.triggers.Invocations()
	if s.hooks, err = triggers.NewHookStore(s.queue); err != nil {
		return err
	}
	if s.keys, err = keys.NewStore(s.queue); err != nil {
		return err
	}
	if s.kv, err = kv.New(s.pool, cfg.Schema); err != nil {
		return err
	}
	s.kv = s.kv.WithQuota(s.kvQuota)
	ec := cfg.Engine
	ec.Pool, ec.Schema, ec.Queue, ec.Listener, ec.Registry, ec.Runtime, ec.KV, ec.Logger =
		s.pool, cfg.Schema, s.queue, s.listener, s.registry, s.runtime, s.kv, s.log
	ec.AccountGuestMemory = s.accountGuestMemory
	if s.engine, err = triggers.NewEngine(ec); err != nil {
		return err
	}
	s.api = newAPI(s)
	s.sweeper = pgqueue.NewSweeper(s.queue, pgqueue.SweeperOptions{
		OnError: func(err error) { s.log.Warn().Err(err).Msg("sweep failed") },
		OnSweep: s.sweepKV,
	})
	return nil
}

// kvSweepEvery is how many queue sweeps (one a second) pass between two
// sweeps of expired key-value entries.
const kvSweepEvery = 5

// sweepKV runs on the queue sweeper's goroutine after each sweep and
// deletes expired key-value entries every kvSweepEvery calls.
func (s *Server) sweepKV(int64) {
	if s.kvSweeps++; s.kvSweeps%kvSweepEvery != 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.kv.Sweep(ctx); err != nil {
		s.log.Warn().Err(err).Msg("kv sweep failed")
	}
}

// KV is the server's key-value stores.
func (s *Server) KV() *kv.Stores { return s.kv }

// Queue is the server's queue client, for callers (the CLI, manifest
// applies) that send or manage queues in the same process.
func (s *Server) Queue() *pgqueue.Client { return s.queue }

// Registry is the server's function registry, for manifest applies.
func (s *Server) Registry() *functions.Registry { return s.registry }

// Triggers is the server's trigger store, for manifest applies.
func (s *Server) Triggers() *triggers.Store { return s.triggers }

// checkGuestMemory refuses a deploy's memory_mb that the runtime's
// memory budgets would never let an instance of account's reach.
func (s *Server) checkGuestMemory(ctx context.Context, account string, memoryMiB int) error {
	all, _ := s.runtime.GuestMemory()
	perAccount, err := s.accountGuestMemory(ctx, account)
	if err != nil {
		return err
	}
	if perAccount > 0 && int64(memoryMiB) > perAccount>>20 {
		return badRequest("memory_mb %d is over the %d MiB this account's functions may hold at once on this server (sluice serve --guest-memory-mb-per-account, or the account's limits): give at most %d", memoryMiB, perAccount>>20, perAccount>>20)
	}
	if all > 0 && int64(memoryMiB) > all>>20 {
		return badRequest("memory_mb %d is over the %d MiB all functions may hold at once on this server (sluice serve --guest-memory-mb): give at most %d", memoryMiB, all>>20, all>>20)
	}
	return nil
}

// validateModule is the registry's deploy-time check (runtime.Check).
func (s *Server) validateModule(ctx context.Context, module []byte, cfg functions.Config) error {
	return s.runtime.Check(ctx, module, cfg.MemoryMiB)
}

// Start starts the listener, the sweeper, the trigger engine and, when an
// address is configured, the HTTP API.
func (s *Server) Start(ctx context.Context) error {
	if err := s.listener.Start(ctx); err != nil {
		return err
	}
	if err := s.sweeper.Start(ctx); err != nil {
		return err
	}
	if err := s.engine.Start(ctx); err != nil {
		return err
	}
	all, perAccount := s.runtime.GuestMemory()
	s.log.Info().Int64("guest_memory_mb", all>>20).Int64("guest_memory_mb_per_account", perAccount>>20).
		Msg("functions' linear memory bounded (0: no bound)")
	if s.cfg.HTTPAddr != "" {
		ln, err := net.Listen("tcp", s.cfg.HTTPAddr)
		if err != nil {
			return fmt.Errorf("server: listen on %s: %w", s.cfg.HTTPAddr, err)
		}
		s.ln = ln
		s.http = &http.Server{
			Handler:           s.Handler(),
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       30 * time.Second,
			IdleTimeout:       2 * time.Minute,
		}
		go func() {
			if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error().Err(err).Msg("http server stopped")
			}
		}()
		s.log.Info().Str("addr", ln.Addr().String()).Msg("http api listening")
	}
	if s.cfg.MetricsAddr != "" {
		ln, err := net.Listen("tcp", s.cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("server: listen for metrics on %s: %w", s.cfg.MetricsAddr, err)
		}
		s.metricsLn = ln
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", s.api.metrics.handler())
		s.metricsHTTP = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second}
		go func() {
			if err := s.metricsHTTP.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error().Err(err).Msg("metrics server stopped")
			}
		}()
		s.log.Info().Str("addr", ln.Addr().String()).Msg("metrics listening")
	}
	s.log.Info().Str("schema", s.cfg.Schema).Msg("sluice serving")
	return nil
}

// MetricsAddr is the metrics listener's address once started ("" without
// one).
func (s *Server) MetricsAddr() string {
	if s.metricsLn == nil {
		return ""
	}
	return s.metricsLn.Addr().String()
}

// Addr is the HTTP API's address once started ("" without one).
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Stop shuts down gracefully: no new HTTP requests or claims, running
// batches get ShutdownGrace to finish, then what still runs is cut short
// and its leases released. Later calls return the first call's result.
func (s *Server) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		var errs []error
		if s.http != nil {
			hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			errs = append(errs, s.http.Shutdown(hctx))
			cancel()
		}
		if s.metricsHTTP != nil {
			errs = append(errs, s.metricsHTTP.Close())
		}
		gctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownGrace)
		errs = append(errs, s.engine.Stop(gctx))
		cancel()
		errs = append(errs, s.sweeper.Stop(ctx), s.listener.Stop(ctx), s.runtime.Close(ctx))
		s.pool.Close()
		s.stopErr = errors.Join(errs...)
		s.log.Info().Msg("sluice stopped")
	})
	return s.stopErr
}

// Handler is the HTTP API (docs/http-api.md): data plane, management,
// webhooks, /healthz, /readyz and /metrics.
func (s *Server) Handler() http.Handler {
	return console.Mount(s.api)
}
