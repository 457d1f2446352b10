package pgqueue

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"runtime/trace"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sluicehq/sluice/pgqueue/migrate"
)

// ErrListenerStopped is returned by Subscribe when the Listener is not
// running.
var ErrListenerStopped = errors.New("pgqueue: listener is not running")

// interestTTL is how long a registration in wake_interest lasts; the
// listener renews registrations of subscribed queues every interestTTL/3.
const interestTTL = 60 * time.Second

// ListenerOptions configure a Listener.
type ListenerOptions struct {
	// Schema is the queue core's schema; "" means DefaultSchema.
	Schema string
	// OnError, when set, is told about connection losses (naming the
	// node), failed connections, failed renewals and, on Citus, failed
	// reads of the node list. The listener keeps retrying on its own.
	OnError func(error)
}

// Listener holds the process's LISTEN connections and wakes subscribers
// when their queue gets new messages. Senders NOTIFY only for queues some
// listener registered interest in, so the hint costs nothing on queues
// nobody waits on. A wake-up is only a hint: after one, receive; when none
// comes, poll.
//
// A NOTIFY reaches only the sessions listening on the server where the
// writing transaction ran. On plain Postgres that is the server the pool
// connects to, and the Listener holds one connection. On Citus a write may
// run on a worker (a function delegated to the worker holding the queue's
// shard, a trigger on a shard), so the Listener also listens on every other
// active primary node of pg_dist_node, with the user, password, database
// and TLS settings of the pool's configuration and the node's host and
// port as pg_dist_node names them. It reads the node list again every
// renewal (interestTTL/3) and reconnects to each node on its own.
type Listener struct {
	pool    *pgxpool.Pool
	schema  string
	channel string
	onError func(error)
	q       queries

	mu       sync.Mutex
	running  bool
	subs     map[string]map[*Subscription]struct{}
	interest map[string]time.Time // key -> when our registration must be renewed
	cancel   context.CancelFunc
	done     chan struct{}
}

// Subscription receives wake-ups for one queue on C until Closed.
type Subscription struct {
	l   *Listener
	key string
	c   chan struct{}
}

// C returns the channel that gets a value (coalesced) whenever the queue
// may have new ready messages.
func (s *Subscription) C() <-chan struct{} { return s.c }

// Close ends the subscription. It is safe to call more than once.
func (s *Subscription) Close() {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	if set := s.l.subs[s.key]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(s.l.subs, s.key)
		}
	}
}

// NewListener returns a Listener for the schema in opts; call Start.
func NewListener(pool *pgxpool.Pool, opts ListenerOptions) (*Listener, error) {
	schema := opts.Schema
	if schema == "" {
		schema = DefaultSchema
	}
	if err := migrate.ValidateSchema(schema); err != nil {
		return nil, fmt.Errorf("pgqueue: new listener: %w", err)
	}
	return &Listener{
		pool:     pool,
		schema:   schema,
		channel:  schema + "_wake",
		onError:  opts.OnError,
		q:        loadQueries(schema),
		subs:     map[string]map[*Subscription]struct{}{},
		interest: map[string]time.Time{},
	}, nil
}

// Start opens the LISTEN connections and starts delivering wake-ups. It
// fails if the listener is already running or the connection to the
// server the pool connects to cannot be opened. On Citus it also connects
// to the other nodes before returning; a node it cannot reach then is
// reported to OnError and retried in the background.
func (l *Listener) Start(ctx context.Context) error {
	var errs []error
	defer func() {
		// Told after unlocking: OnError may call the listener.
		for _, err := range errs {
			l.report(err)
		}
	}()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running {
		return fmt.Errorf("pgqueue: start listener on schema %s: already running", l.schema)
	}
	home := l.pool.Config().ConnConfig
	conn, err := l.connect(ctx, home)
	if err != nil {
		return err
	}
	others, err := l.otherNodes(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	conns := make([]*pgx.Conn, len(others))
	connErrs := make([]error, len(others))
	var wg sync.WaitGroup
	for i, n := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conns[i], connErrs[i] = l.connect(ctx, n.config(home))
		}()
	}
	wg.Wait()
	first := map[node]*pgx.Conn{{}: conn}
	for i, n := range others {
		first[n] = conns[i]
		if connErrs[i] != nil {
			errs = append(errs, connErrs[i])
		}
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.running, l.cancel, l.done = true, cancel, make(chan struct{})
	go l.run(runCtx, first, l.done)
	return nil
}

// Stop closes the LISTEN connection and waits for the listener to end, or
// for ctx. Subscriptions stay open but get no more wake-ups. Stop is
// idempotent.
func (l *Listener) Stop(ctx context.Context) error {
	l.mu.Lock()
	if !l.running {
		l.mu.Unlock()
		return nil
	}
	l.running = false
	l.cancel()
	done := l.done
	clear(l.interest)
	l.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("pgqueue: stop listener on schema %s: %w", l.schema, ctx.Err())
	}
}

// Subscribe returns a subscription to wake-ups for queue in account. It
// registers the process's interest in the queue first, so that senders
// committing after Subscribe returns will notify.
func (l *Listener) Subscribe(ctx context.Context, account, queue string) (*Subscription, error) {
	key := account + "/" + queue
	s := &Subscription{l: l, key: key, c: make(chan struct{}, 1)}
	l.mu.Lock()
	if !l.running {
		l.mu.Unlock()
		return nil, ErrListenerStopped
	}
	if l.subs[key] == nil {
		l.subs[key] = map[*Subscription]struct{}{}
	}
	l.subs[key][s] = struct{}{}
	renew := time.Now().After(l.interest[key])
	l.mu.Unlock()
	if renew {
		if err := l.register(ctx, []string{account}, []string{queue}); err != nil {
			s.Close()
			return nil, err
		}
		l.mu.Lock()
		l.interest[key] = time.Now().Add(interestTTL / 3)
		l.mu.Unlock()
	}
	return s, nil
}

func (l *Listener) register(ctx context.Context, accounts, queues []string) error {
	_, err := l.pool.Exec(ctx, l.q.get("register_interest"), accounts, queues, int(interestTTL/time.Second))
	if err != nil {
		return fmt.Errorf("pgqueue: listener on schema %s: register interest: %w", l.schema, err)
	}
	return nil
}

// node is a server the listener listens on: the zero node is the one the
// pool connects to; on Citus, the others are named as pg_dist_node names
// them.
type node struct {
	host string
	port uint16
}

// config returns the pool's connection settings pointed at n: the same
// user, password, database, TLS mode and runtime parameters, n's host and
// port (also as the TLS server name where one was checked or sent).
func (n node) config(pool *pgx.ConnConfig) *pgx.ConnConfig {
	cfg := pool.Copy()
	if n == (node{}) {
		return cfg
	}
	tlsFor := func(c *tls.Config) *tls.Config {
		if c != nil && c.ServerName != "" {
			c = c.Clone()
			c.ServerName = n.host
		}
		return c
	}
	cfg.Host, cfg.Port, cfg.TLSConfig = n.host, n.port, tlsFor(cfg.TLSConfig)
	// The fallbacks are other hosts (not this node) or the same host
	// without TLS (sslmode=prefer) or with it (allow): keep one attempt
	// per TLS choice, at n.
	tried := map[bool]bool{cfg.TLSConfig != nil: true}
	var fallbacks []*pgconn.FallbackConfig
	for _, f := range cfg.Fallbacks {
		if !tried[f.TLSConfig != nil] {
			tried[f.TLSConfig != nil] = true
			fallbacks = append(fallbacks, &pgconn.FallbackConfig{Host: n.host, Port: n.port, TLSConfig: tlsFor(f.TLSConfig)})
		}
	}
	cfg.Fallbacks = fallbacks
	return cfg
}

// otherNodes lists the servers besides the pool's own where a queue's
// writes may run and NOTIFY: on Citus, the other active primary nodes; on
// plain Postgres, none.
func (l *Listener) otherNodes(ctx context.Context) ([]node, error) {
	var citus bool
	if err := l.pool.QueryRow(ctx, l.q.get("citus_installed")).Scan(&citus); err != nil {
		return nil, fmt.Errorf("pgqueue: listener on schema %s: look for the citus extension: %w", l.schema, err)
	}
	if !citus {
		return nil, nil
	}
	rows, err := l.pool.Query(ctx, l.q.get("citus_other_nodes"))
	if err != nil {
		return nil, fmt.Errorf("pgqueue: listener on schema %s: list the citus nodes: %w", l.schema, err)
	}
	nodes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (node, error) {
		var n node
		var port int32
		err := r.Scan(&n.host, &port)
		n.port = uint16(port)
		return n, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgqueue: listener on schema %s: list the citus nodes: %w", l.schema, err)
	}
	return nodes, nil
}

// connect opens a connection with cfg and LISTENs on the schema's channel.
func (l *Listener) connect(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	where := fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgqueue: listener on schema %s: connect to %s: %w", l.schema, where, err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.channel}.Sanitize()); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("pgqueue: listener on schema %s: listen on channel %s at %s: %w", l.schema, l.channel, where, err)
	}
	return conn, nil
}

func (l *Listener) report(err error) {
	if l.onError != nil && err != nil {
		l.onError(err)
	}
}

// run renews the interest registrations and keeps one goroutine listening
// per node (first holds the connections Start opened, nil where it could
// not), starting and ending them as the node list changes.
func (l *Listener) run(ctx context.Context, first map[node]*pgx.Conn, done chan struct{}) {
	defer close(done)
	var wg sync.WaitGroup
	defer wg.Wait()
	home := l.pool.Config().ConnConfig
	listening := map[node]context.CancelFunc{}
	listen := func(n node, conn *pgx.Conn) {
		nctx, cancel := context.WithCancel(ctx)
		listening[n] = cancel
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.listen(nctx, n.config(home), conn)
		}()
	}
	for n, conn := range first {
		listen(n, conn)
	}
	tick := time.NewTicker(interestTTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// Renew on a schedule, not only when idle: a queue that is woken
		// all the time must keep its registration too.
		l.renew(ctx)
		others, err := l.otherNodes(ctx)
		if err != nil {
			if ctx.Err() == nil {
				l.report(err)
			}
			continue
		}
		keep := map[node]bool{{}: true}
		for _, n := range others {
			keep[n] = true
			if listening[n] == nil {
				listen(n, nil)
			}
		}
		for n, cancel := range listening {
			if !keep[n] {
				cancel()
				delete(listening, n)
			}
		}
	}
}

// listen delivers the notifications of one node until ctx ends, on conn
// (nil: connect first), reconnecting with backoff when the connection is
// lost. After each connection it opens itself it wakes every subscriber,
// since notifications may have been missed meanwhile.
func (l *Listener) listen(ctx context.Context, cfg *pgx.ConnConfig, conn *pgx.Conn) {
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if conn == nil {
			var err error
			if conn, err = l.connect(ctx, cfg); err != nil {
				if ctx.Err() == nil {
					l.report(err)
				}
				select {
				case <-ctx.Done():
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, 5*time.Second)
				continue
			}
			backoff = 100 * time.Millisecond
			l.wakeAll()
		}
		n, err := conn.WaitForNotification(ctx)
		switch {
		case err == nil:
			if trace.IsEnabled() {
				trace.Log(ctx, "sluice.notify", n.Payload)
			}
			l.wake(n.Payload)
		case ctx.Err() != nil:
			return
		default:
			l.report(fmt.Errorf("pgqueue: listener on schema %s: connection to %s:%d lost: %w", l.schema, cfg.Host, cfg.Port, err))
			conn.Close(context.Background())
			conn = nil
		}
	}
}

// renew refreshes the registrations of every subscribed queue.
func (l *Listener) renew(ctx context.Context) {
	l.mu.Lock()
	var accounts, queues []string
	next := time.Now().Add(interestTTL / 3)
	for key := range l.subs {
		a, q, _ := cutKey(key)
		accounts, queues = append(accounts, a), append(queues, q)
		l.interest[key] = next
	}
	l.mu.Unlock()
	if len(accounts) > 0 {
		l.report(l.register(ctx, accounts, queues))
	}
}

func cutKey(key string) (account, queue string, ok bool) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return key, "", false
}

func (l *Listener) wake(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for s := range l.subs[key] {
		select {
		case s.c <- struct{}{}:
		default:
		}
	}
}

func (l *Listener) wakeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, set := range l.subs {
		for s := range set {
			select {
			case s.c <- struct{}{}:
			default:
			}
		}
	}
}
