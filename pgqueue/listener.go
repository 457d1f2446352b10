package pgqueue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
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
	// OnError, when set, is told about connection losses and failed
	// renewals. The listener keeps retrying on its own.
	OnError func(error)
}

// Listener holds the process's one LISTEN connection and wakes
// subscribers when their queue gets new messages. Senders NOTIFY only for
// queues some listener registered interest in, so the hint costs nothing
// on queues nobody waits on. A wake-up is only a hint: after one,
// receive; when none comes, poll.
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

// Start opens the LISTEN connection and starts delivering wake-ups. It
// fails if the listener is already running or the connection cannot be
// opened.
func (l *Listener) Start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running {
		return fmt.Errorf("pgqueue: start listener on schema %s: already running", l.schema)
	}
	conn, err := l.connect(ctx)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.running, l.cancel, l.done = true, cancel, make(chan struct{})
	go l.run(runCtx, conn, l.done)
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

func (l *Listener) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, l.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("pgqueue: listener on schema %s: connect: %w", l.schema, err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.channel}.Sanitize()); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("pgqueue: listener on schema %s: listen on channel %s: %w", l.schema, l.channel, err)
	}
	return conn, nil
}

func (l *Listener) report(err error) {
	if l.onError != nil && err != nil {
		l.onError(err)
	}
}

func (l *Listener) run(ctx context.Context, conn *pgx.Conn, done chan struct{}) {
	defer close(done)
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	backoff := 100 * time.Millisecond
	nextRenew := time.Now().Add(interestTTL / 3)
	for ctx.Err() == nil {
		// Renew on a schedule, not only when idle: a queue that is woken
		// all the time must keep its registration too.
		if time.Now().After(nextRenew) {
			l.renew(ctx)
			nextRenew = time.Now().Add(interestTTL / 3)
		}
		if conn == nil {
			var err error
			if conn, err = l.connect(ctx); err != nil {
				l.report(err)
				select {
				case <-ctx.Done():
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, 5*time.Second)
				continue
			}
			backoff = 100 * time.Millisecond
			// Notifications may have been missed while disconnected.
			l.wakeAll()
		}
		waitCtx, cancel := context.WithDeadline(ctx, nextRenew)
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		switch {
		case err == nil:
			l.wake(n.Payload)
		case ctx.Err() != nil:
			return
		case errors.Is(err, context.DeadlineExceeded) || pgconnTimeout(err):
			// Time to renew; the loop does it.
		default:
			l.report(fmt.Errorf("pgqueue: listener on schema %s: connection lost: %w", l.schema, err))
			conn.Close(context.Background())
			conn = nil
		}
	}
}

func pgconnTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
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
