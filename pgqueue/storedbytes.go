package pgqueue

import (
	"context"
	"fmt"
	"time"
)

// StoredBytes is what an account's messages take up, as the last depth
// sample measured it (a Sweeper samples once a minute; Sweeper.RecordStats
// at once).
type StoredBytes struct {
	// Bytes is the size of the bodies and headers of the account's
	// messages and dead letters as stored: compressed where Postgres
	// compressed them.
	Bytes int64
	// SampledAt is the minute of the sample; zero before the first.
	SampledAt time.Time
}

// StoredBytes returns what account's messages and dead letters took up at
// the last depth sample. It reads one row per queue of the account.
func (c *Client) StoredBytes(ctx context.Context, account string) (StoredBytes, error) {
	s, err := c.sampleOn(ctx, c.pool, account)
	if err != nil {
		return StoredBytes{}, fmt.Errorf("pgqueue: stored bytes of account %s: %w", account, err)
	}
	return s.StoredBytes, nil
}

// storedSample is an account's StoredBytes, and whether its sample is
// recent enough (storedBytesMaxAge, by the database's clock) to refuse
// sends on.
type storedSample struct {
	StoredBytes
	recent bool
}

// sampleOn reads account's last sample on db.
func (c *Client) sampleOn(ctx context.Context, db DB, account string) (storedSample, error) {
	var s storedSample
	var at *time.Time
	err := db.QueryRow(ctx, c.q.get("stored_bytes"), account, storedBytesMaxAge.Seconds()).Scan(&at, &s.Bytes, &s.recent)
	if err != nil {
		return storedSample{}, err
	}
	if at != nil {
		s.SampledAt = *at
	}
	return s, nil
}

// The stored bytes of accounts that send are read again after
// storedBytesTTL (samples are taken once a minute); the cache holds
// storedBytesCacheSize accounts at most. A sample older than
// storedBytesMaxAge refuses nothing: sampling has stopped (no Sweeper
// runs), and an account that has emptied its queues since would
// otherwise be refused for good.
const (
	storedBytesTTL       = 5 * time.Second
	storedBytesCacheSize = 10_000
	storedBytesMaxAge    = 5 * time.Minute
)

// checkStoredBytes refuses, with ErrStoredBytesLimit, to add to account's
// messages when its stored bytes have reached Options.StoredBytesLimit;
// what and name name the refused operation ("send to queue", "q"), db is
// what it runs on (and what the check reads on, when it reads).
func (c *Client) checkStoredBytes(ctx context.Context, db DB, account, what, name string) error {
	if c.storedLimit == nil {
		return nil
	}
	op := what + " " + quote(name)
	limit, err := c.storedLimit(ctx, db, account)
	if err != nil {
		return fmt.Errorf("pgqueue: %s: %w", op, err)
	}
	if limit <= 0 {
		return nil
	}
	now := time.Now()
	s, ok := c.stored.Get(account, now)
	if !ok {
		if s, err = c.sampleOn(ctx, db, account); err != nil {
			return fmt.Errorf("pgqueue: %s: stored bytes of account %s: %w", op, account, err)
		}
		c.stored.Put(account, s, now)
	}
	if s.recent && s.Bytes >= limit {
		return newError(ErrStoredBytesLimit,
			"%s: account %s stores %d bytes of messages and dead letters (sampled %s), its limit is %d; receive, delete or purge some (the next sample, within a minute, counts them), or ask the operator to raise the limit",
			op, account, s.Bytes, s.SampledAt.UTC().Format(time.RFC3339), limit)
	}
	return nil
}
