package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"runtime/trace"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/triggers"
)

// serveFlags are the flags `sluice serve` and `sluice dev` share.
type serveFlags struct {
	addr, schema, cacheDir, logLevel, logFormat string
	longGuestCgroup                             string
	denyPrivateOutbound                         bool
	nat64Prefixes                               string         // --nat64-prefix as given
	nat64                                       []netip.Prefix // parsed by check
	privateNetworks                             string         // --private-outbound-networks as given
	private                                     []netip.Prefix // parsed by check
	metricsAddr                                 string
	metricsSeries                               int
	limits                                      server.AccountLimits
	grace, invocationRetention                  time.Duration
	maxConns, webhookReads, authFailures        int
	pageReads                                   int
	receiveBytes                                int64
	answerWriteTimeout                          time.Duration
	guestMemoryMiB, guestMemoryPerAccountMiB    int64
	// envErr is an environment variable register could not read; check
	// reports it.
	envErr error
}

// register defines the flags on fs with the command's defaults: its
// address, its log format and whether functions are kept off loopback and
// private addresses (serve: yes, a server others deploy to; dev: no, local
// development calls local services).
func (f *serveFlags) register(fs *flag.FlagSet, defaultAddr, defaultLogFormat string, denyPrivateOutbound bool) {
	fs.StringVar(&f.addr, "addr", envOr("SLUICE_ADDR", defaultAddr), "HTTP API address (empty: no HTTP) [SLUICE_ADDR]")
	fs.StringVar(&f.schema, "schema", envOr("SLUICE_SCHEMA", "sluice"), "database schema [SLUICE_SCHEMA]")
	fs.StringVar(&f.cacheDir, "cache-dir", os.Getenv("SLUICE_CACHE_DIR"), "compiled WASM cache folder [SLUICE_CACHE_DIR]")
	fs.StringVar(&f.longGuestCgroup, "long-guest-cgroup", os.Getenv("SLUICE_LONG_GUEST_CGROUP"), "cgroup (marked idle) that guests running past 20 ms take their CPU in, so they leave it to a Postgres on the same machine; see docs/function-abi.md (empty: none) [SLUICE_LONG_GUEST_CGROUP]")
	if v, ok := os.LookupEnv("SLUICE_DENY_PRIVATE_OUTBOUND"); ok {
		deny, err := strconv.ParseBool(v)
		if err != nil {
			f.envErr = usageErrorf("SLUICE_DENY_PRIVATE_OUTBOUND=%q: use true or false", v)
		} else {
			denyPrivateOutbound = deny
		}
	}
	fs.BoolVar(&f.denyPrivateOutbound, "deny-private-outbound", denyPrivateOutbound,
		"refuse every function's HTTP calls to loopback and private addresses, even hosts its allowed_outbound_hosts names literally (sluice serve: on unless turned off with --deny-private-outbound=false, which lets any deployer's functions reach this server's network; sluice dev: off) [SLUICE_DENY_PRIVATE_OUTBOUND]. Link-local and cloud metadata addresses are refused always")
	fs.StringVar(&f.privateNetworks, "private-outbound-networks", os.Getenv("SLUICE_PRIVATE_OUTBOUND_NETWORKS"),
		"under --deny-private-outbound, the loopback, private or shared networks functions may still reach, comma-separated (e.g. 10.1.2.0/24 where the services they call run; one address: 10.1.2.3/32), at hosts their allowed_outbound_hosts name literally; every other private address stays refused, and metadata addresses inside these too (empty: none) [SLUICE_PRIVATE_OUTBOUND_NETWORKS]")
	fs.StringVar(&f.nat64Prefixes, "nat64-prefix", os.Getenv("SLUICE_NAT64_PREFIXES"),
		"the NAT64 translation prefixes of this server's network when it uses its own, comma-separated (e.g. 2001:db8:64::/96; lengths /32, /40, /48, /56, /64 or /96): a function's connection to an address in one is checked as the IPv4 address inside, as in 64:ff9b::/96 always (empty: none) [SLUICE_NAT64_PREFIXES]")
	fs.DurationVar(&f.grace, "grace", 30*time.Second, "on SIGTERM, how long running batches may finish")
	fs.IntVar(&f.maxConns, "max-conns", 20, "database connection pool size (2 or more)")
	fs.DurationVar(&f.invocationRetention, "invocation-retention", triggers.DefaultInvocationRetention, "how long invocation records are kept (sluice invocations, sluice logs, the console); older ones are deleted once a minute (at least 1m)")
	fs.Int64Var(&f.guestMemoryMiB, "guest-memory-mb", 0, "MiB of linear memory all functions' instances may hold at once; a guest growing past it is refused memory and fails with memory_limit (0: three quarters of the memory this process may use; negative: no bound)")
	fs.Int64Var(&f.guestMemoryPerAccountMiB, "guest-memory-mb-per-account", 4096, "MiB of linear memory one account's instances may hold at once (idle reactor instances included), so that no tenant takes the whole of --guest-memory-mb; deploys through the API with a larger memory_mb are refused (0: no bound; an account's own: account_limits.guest_memory_mb)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", os.Getenv("SLUICE_METRICS_ADDR"), "second listener serving every account's /metrics without a key, for the operator (empty: none) [SLUICE_METRICS_ADDR]")
	fs.IntVar(&f.metricsSeries, "metrics-series-per-account", 100, "queue and function label values per account in the metrics; the rest are summed under ~other")
	d := server.DefaultLimits
	fs.IntVar(&f.limits.Queues, "limit-queues", d.Queues, "queues an account may create through the API")
	fs.IntVar(&f.limits.Functions, "limit-functions", d.Functions, "functions an account may deploy through the API")
	fs.IntVar(&f.limits.Triggers, "limit-triggers", d.Triggers, "triggers an account may create through the API")
	fs.IntVar(&f.limits.Hooks, "limit-hooks", d.Hooks, "webhook hooks an account may create through the API")
	fs.IntVar(&f.limits.Keys, "limit-keys", d.Keys, "access keys (not revoked) an account may create through the API")
	fs.IntVar(&f.limits.Topics, "limit-topics", d.Topics, "topics an account may create through the API")
	fs.Int64Var(&f.limits.ModuleBytes, "limit-module-bytes", d.ModuleBytes, "bytes of distinct modules an account may store")
	fs.Int64Var(&f.limits.KVEntries, "limit-kv-entries", d.KVEntries, "key-value entries an account's stores may hold together (functions and API alike)")
	fs.Int64Var(&f.limits.KVBytes, "limit-kv-bytes", d.KVBytes, "bytes of keys plus values an account's stores may hold together")
	fs.Int64Var(&f.limits.MessageBytes, "limit-message-bytes", d.MessageBytes, "bytes of message bodies and headers an account's queues and dead-letter queues may hold together, as sampled once a minute; past it the account's sends and publishes get 403")
	fs.IntVar(&f.authFailures, "auth-failures-per-minute", 60, "failed authentications a client address may make a minute before 429, counted over every sluice serve on the database (negative: no limit)")
	fs.IntVar(&f.webhookReads, "webhook-reads", 64, "webhook bodies read at once (one client address an eighth of them, one account's hooks a quarter); more get 503 with Retry-After")
	fs.Int64Var(&f.receiveBytes, "receive-bytes", 256<<20, "bytes of received messages (bodies and headers) held until their answers are written (one account a quarter of them); a receive beyond gets 429 with Retry-After and claims nothing")
	fs.IntVar(&f.pageReads, "page-reads", 32, "peek and dead-letter pages (up to 8 MiB each) read and answered at once (one account a quarter of them); more get 429 with Retry-After")
	fs.DurationVar(&f.answerWriteTimeout, "answer-write-timeout", time.Minute, "how long an answer may take to reach its client once ready (a log stream: each event); a client that does not read it is cut off")
	fs.StringVar(&f.logLevel, "log-level", envOr("SLUICE_LOG_LEVEL", "info"), "debug, info, warn or error [SLUICE_LOG_LEVEL]")
	fs.StringVar(&f.logFormat, "log-format", envOr("SLUICE_LOG_FORMAT", defaultLogFormat), "json or console [SLUICE_LOG_FORMAT]")
}

// check reports a flag value the server cannot run with, and parses the
// values config passes on parsed (the NAT64 prefixes, the private
// networks).
func (f *serveFlags) check() error {
	if f.envErr != nil {
		return f.envErr
	}
	var err error
	if f.nat64, err = parsePrefixes("--nat64-prefix", f.nat64Prefixes, "an IPv6 prefix (e.g. 2001:db8:64::/96)"); err != nil {
		return err
	}
	if f.private, err = parsePrefixes("--private-outbound-networks", f.privateNetworks, "a network (e.g. 10.1.2.0/24; one address: 10.1.2.3/32)"); err != nil {
		return err
	}
	if len(f.private) > 0 && !f.denyPrivateOutbound {
		return usageErrorf("--private-outbound-networks %q: these are what functions may still reach under --deny-private-outbound, which is off here (every private address listed literally is reachable); turn it on, or leave the networks out", f.privateNetworks)
	}
	if f.guestMemoryMiB > server.MaxGuestMemoryMiB {
		return usageErrorf("--guest-memory-mb %d: give at most %d MiB (negative: no bound)", f.guestMemoryMiB, server.MaxGuestMemoryMiB)
	}
	if f.guestMemoryPerAccountMiB < 0 || f.guestMemoryPerAccountMiB > server.MaxGuestMemoryMiB {
		return usageErrorf("--guest-memory-mb-per-account %d: give a number of MiB up to %d (0: no bound)", f.guestMemoryPerAccountMiB, server.MaxGuestMemoryMiB)
	}
	if f.receiveBytes < 1<<20 {
		return usageErrorf("--receive-bytes %d: give at least 1048576 (1 MiB, a message's most; 268435456 by default)", f.receiveBytes)
	}
	if f.pageReads < 1 {
		return usageErrorf("--page-reads %d: give at least 1 (32 by default)", f.pageReads)
	}
	if f.answerWriteTimeout < time.Second {
		return usageErrorf("--answer-write-timeout %s: give at least 1s (1m by default)", f.answerWriteTimeout)
	}
	if f.invocationRetention < time.Minute {
		return usageErrorf("--invocation-retention %s: give at least 1m (e.g. 24h or 168h, the default)", f.invocationRetention)
	}
	return nil
}

// parsePrefixes parses a flag's comma-separated prefixes; want says what
// one should be. The runtime checks what they may be (the NAT64
// prefixes' lengths).
func parsePrefixes(flag, value, want string) ([]netip.Prefix, error) {
	var prefixes []netip.Prefix
	for _, v := range strings.Split(value, ",") {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		p, err := netip.ParsePrefix(v)
		if err != nil {
			return nil, usageErrorf("%s %q: %q is not %s", flag, value, v, want)
		}
		prefixes = append(prefixes, p)
	}
	return prefixes, nil
}

// config is the server's configuration from the flags; check has
// accepted them.
func (f *serveFlags) config(databaseURL string, logger zerolog.Logger) server.Config {
	return server.Config{
		Engine:      triggers.Config{InvocationRetention: f.invocationRetention},
		DatabaseURL: databaseURL, Schema: f.schema, HTTPAddr: f.addr, CacheDir: f.cacheDir,
		LongGuestCgroup: f.longGuestCgroup, DenyPrivateOutbound: f.denyPrivateOutbound, PrivateOutboundNetworks: f.private,
		NAT64Prefixes: f.nat64, GuestMemory: max(f.guestMemoryMiB, -1) << 20, GuestMemoryPerAccount: f.guestMemoryPerAccountMiB << 20,
		ShutdownGrace: f.grace, MaxConns: int32(f.maxConns), Logger: logger,
		WebhookReads: f.webhookReads, PageReads: f.pageReads, ReceiveBytes: f.receiveBytes, AnswerWriteTimeout: f.answerWriteTimeout, AuthFailuresPerMinute: f.authFailures,
		MetricsAddr: f.metricsAddr, MetricsSeriesPerAccount: f.metricsSeries, Limits: f.limits,
	}
}

func (f *serveFlags) logger(w io.Writer) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(f.logLevel)
	if err != nil || f.logLevel == "" {
		return zerolog.Nop(), usageErrorf("--log-level %q: use debug, info, warn or error", f.logLevel)
	}
	switch f.logFormat {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000"}
	default:
		return zerolog.Nop(), usageErrorf("--log-format %q: use json or console", f.logFormat)
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger(), nil
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func runServe(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := newFlagSet("serve", stderr)
	var f serveFlags
	f.register(fs, ":8080", "json", true)
	migrate := fs.Bool("migrate", false, "apply pending migrations before serving")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected argument %q", fs.Arg(0))
	}
	if err := f.check(); err != nil {
		return err
	}
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		return usageErrorf("DATABASE_URL is not set: point it at Postgres (or run `sluice dev`, which starts one)")
	}
	logger, err := f.logger(stderr)
	if err != nil {
		return err
	}
	cfg := f.config(url, logger)
	cfg.Migrate = *migrate
	if path := os.Getenv("SLUICE_TRACE"); path != "" {
		stop, err := startTrace(path)
		if err != nil {
			return err
		}
		defer stop()
	}
	return serve(ctx, cfg, nil)
}

// startTrace writes a Go execution trace of the process to path until the
// returned stop is called (SLUICE_TRACE, for diagnosing latency).
func startTrace(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("SLUICE_TRACE: %w", err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("SLUICE_TRACE: start trace: %w", err)
	}
	return func() { trace.Stop(); f.Close() }, nil
}

// serve opens and starts a server, runs then (if any) once it is up, and
// waits for ctx (SIGINT/SIGTERM) before stopping gracefully.
func serve(ctx context.Context, cfg server.Config, then func(context.Context, *server.Server) error) error {
	srv, err := server.Open(ctx, cfg)
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		_ = srv.Stop(context.Background())
		return err
	}
	if then != nil {
		if err := then(ctx, srv); err != nil {
			_ = srv.Stop(context.Background())
			return err
		}
	}
	<-ctx.Done()
	cfg.Logger.Info().Msg("shutting down: no new work; running batches may finish")
	if err := srv.Stop(context.Background()); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			// The grace period ended: what still ran was cut short and its
			// leases released, so another process takes it at once. That is
			// a graceful stop (exit 0), worth a warning.
			cfg.Logger.Warn().Err(err).Msg("stopped: batches still running after the grace period were cut short and their leases released")
			return nil
		}
		return fmt.Errorf("stop: %w", err)
	}
	return nil
}
