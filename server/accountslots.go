package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/namedsql"
)

// Per account, across every process serving the database, bounds on what
// an account holds at once: beyond them a request gets 429 with
// Retry-After (SECURITY.md). Each thing held is a leased row of the table
// account_slots (migration 007).
const (
	// maxAccountDeploys is how many deploys of one account may compile
	// at once (each holds its module, up to maxModuleBytes, and a
	// compilation of up to deployTimeout).
	maxAccountDeploys = 4
	// maxAccountLogStreams is how many log streams of one account may be
	// open at once (each polls the invocation log).
	maxAccountLogStreams = 16
	// maxAccountInvokes is how many invoke calls of one account may run
	// at once, over every server process: a share of a process's
	// maxInvokes, so that one account cannot hold them all.
	maxAccountInvokes = 4
	// slotLease is how long a slot stays held without a renewal: the
	// slots of a process that died are free again within it.
	slotLease = 30 * time.Second
)

// Kinds of slot (account_slots.kind).
const (
	slotDeploy    = "deploy"
	slotLogStream = "log_stream"
	slotInvoke    = "invoke"
)

// accountSlots takes and gives the slots of account_slots.
type accountSlots struct {
	pool  *pgxpool.Pool
	q     namedsql.Statements
	log   zerolog.Logger
	lease time.Duration // slotLease, renewed every third of it
}

// heldSlot is a slot taken by this process, renewed in the background
// until give.
type heldSlot struct {
	s                     *accountSlots
	account, kind, holder string
	slot                  int
	stop                  context.CancelFunc
	stopped               chan struct{} // closed when the renewals have ended
}

// takeAttempts bounds the tries of take when other takers get the slot it
// chose first.
const takeAttempts = 3

// take holds a slot of account's kind, one of max: nil when all max are
// held.
func (s *accountSlots) take(ctx context.Context, account, kind string, max int) (*heldSlot, error) {
	h := &heldSlot{s: s, account: account, kind: kind, holder: randomID()}
	for range takeAttempts {
		err := s.pool.QueryRow(ctx, s.q.Get("take_account_slot"), account, kind, max, h.holder,
			s.lease.Seconds()).Scan(&h.slot)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("take a %s slot of account %s: %w", kind, account, err)
		}
		ctx, stop := context.WithCancel(context.Background())
		h.stop, h.stopped = stop, make(chan struct{})
		go h.renewEvery(ctx, s.lease/3)
		return h, nil
	}
	return nil, nil
}

// hold takes a slot as take does; when all max are held it answers a 429
// (Retry-After retry seconds) saying the account has max of what, then
// advice.
func (s *accountSlots) hold(ctx context.Context, account, kind string, max, retry int, what, advice string) (*heldSlot, error) {
	h, err := s.take(ctx, account, kind, max)
	if err == nil && h == nil {
		err = tooManyRequests(retry, "account %s has %d %s: %s", account, max, what, advice)
	}
	return h, err
}

// renewEvery renews h's lease every period until ctx is done.
func (h *heldSlot) renewEvery(ctx context.Context, period time.Duration) {
	defer close(h.stopped)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := h.renew(ctx); err != nil && ctx.Err() == nil {
			h.s.log.Warn().Err(err).Str("account", h.account).Str("kind", h.kind).Int("slot", h.slot).
				Msg("renew an account slot; it is free to others once its lease runs out")
		}
	}
}

// errSlotLost is renew's error when the lease had run out and another
// holder took the slot.
var errSlotLost = errors.New("the slot's lease ran out and another holder took it")

// renew extends h's lease by the slots' lease from now.
func (h *heldSlot) renew(ctx context.Context) error {
	tag, err := h.s.pool.Exec(ctx, h.s.q.Get("renew_account_slot"), h.account, h.kind, h.slot, h.holder,
		h.s.lease.Seconds())
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return errSlotLost
	}
	return nil
}

// give frees h. It does not depend on the holder's context (often a
// request's, canceled by then); when the database cannot be reached, the
// slot frees itself when its lease runs out.
func (h *heldSlot) give() {
	h.stop()
	<-h.stopped
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := h.s.pool.Exec(ctx, h.s.q.Get("give_account_slot"), h.account, h.kind, h.slot, h.holder); err != nil {
		h.s.log.Warn().Err(err).Str("account", h.account).Str("kind", h.kind).Int("slot", h.slot).
			Msg("give an account slot back; it is free to others once its lease runs out")
	}
}
