package pgqueue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PendingReceive is a receive whose leases are being committed: its
// Messages were leased by a statement that has run, in a transaction whose
// commit (the flush of the commit record to disk) had not returned when
// ReceivePending did.
type PendingReceive struct {
	// Messages are the messages received, in the order Receive returns
	// them.
	Messages []Message
	done     chan struct{}
	err      error
}

// Committed is closed once the transaction that leases the messages has
// ended; Err then says whether it committed.
func (p *PendingReceive) Committed() <-chan struct{} { return p.done }

// Err is nil once the leases are committed and the commit's error when it
// failed, in which case the messages were not leased (or, with the
// connection lost during the commit, may be leased until their visibility
// timeout: nobody holds a receipt that could settle them). Before
// Committed is closed it is nil.
func (p *PendingReceive) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Wait waits until the transaction that leases the messages has ended and
// returns Err. It takes no context: the database ends the commit whatever
// the client does, and Wait returns then.
func (p *PendingReceive) Wait() error {
	<-p.done
	return p.err
}

// ReceivePending receives like Receive (o.Wait and o.Delete are not
// allowed) but returns as soon as the database has leased the messages,
// while the transaction that leases them commits: on a machine whose disk
// takes half a millisecond to flush a commit, a consumer starts its work
// that much sooner. What the messages may be used for before the commit
// has succeeded (Wait returns nil) is work that may be thrown away: the
// consumer must not settle them (Ack, Nack, Fail, Release, Extend) before,
// and must give up its work when the commit fails, since the messages were
// then not leased and are delivered again. Use Receive when the work must
// not start before the lease is durable (a message of an ordered group:
// Receive's group guarantees hold from its commit on).
//
// The statement runs on a connection of the pool held until the commit
// ends; like Receive's, it is not cancelled by ctx once sent.
func (c *Client) ReceivePending(ctx context.Context, account, queue string, o ReceiveOptions) (*PendingReceive, error) {
	if o.Wait > 0 || o.Delete {
		return nil, errors.New("pgqueue: receive pending: Wait and Delete are not allowed: use Receive")
	}
	o, vt, err := o.lease()
	if err != nil {
		return nil, err
	}
	var p *PendingReceive
	err = c.byID(ctx, "receive from queue "+quote(queue), account, queue, func(id int64) error {
		var err error
		p, err = c.receivePending(ctx, []any{id, account, queue, o.Max, vt}, o.Max)
		return convertError("receive from queue "+quote(queue), err)
	})
	return p, err
}

// receivePending sends the receive statement, a request that the server
// flush its output and the Sync that commits, all at once, and reads the
// rows, which arrive before the commit; a goroutine waits for the commit
// and gives the connection back.
func (c *Client) receivePending(ctx context.Context, args []any, max int) (*PendingReceive, error) {
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	// Named by its SQL, pgx names the prepared statement after its digest
	// and keeps it for the connection's next claims.
	sql := c.q.get("receive_id")
	sd, err := conn.Conn().Prepare(ctx, sql, sql)
	if err != nil {
		conn.Release()
		return nil, err
	}
	var params pgx.ExtendedQueryBuilder
	if err := params.Build(conn.Conn().TypeMap(), sd, args); err != nil {
		conn.Release()
		return nil, err
	}
	pl := conn.Conn().PgConn().StartPipeline(context.WithoutCancel(ctx))
	pl.SendQueryStatement(sd, params.ParamValues, params.ParamFormats, params.ResultFormats)
	pl.SendFlushRequest()
	pl.SendPipelineSync()
	p := &PendingReceive{done: make(chan struct{})}
	if err := pl.Flush(); err != nil {
		p.finish(conn, pl, "")
		return nil, err
	}
	res, err := pl.GetResults()
	if err == nil {
		rr, ok := res.(*pgconn.ResultReader)
		if !ok {
			err = fmt.Errorf("pipeline answered %T, not rows", res)
		} else {
			p.Messages, err = scanMessages(pgx.RowsFromResultReader(conn.Conn().TypeMap(), rr), max)
		}
	}
	if err != nil {
		// The statement failed (or its rows could not be read): the Sync
		// rolls its transaction back; wait for that before answering, so
		// that a retry does not meet this transaction's locks. The
		// prepared statement is dropped: it may be what failed (a
		// migration changed the function's result since it was prepared).
		p.finish(conn, pl, sql)
		return nil, err
	}
	go p.finish(conn, pl, "")
	return p, nil
}

// finish reads the pipeline's Sync (the commit's outcome), closes the
// pipeline, deallocates the prepared statement forget (when not ""),
// gives the connection back and closes done.
func (p *PendingReceive) finish(conn *pgxpool.Conn, pl *pgconn.Pipeline, forget string) {
	defer close(p.done)
	defer conn.Release()
	defer func() {
		if forget != "" && !conn.Conn().IsClosed() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = conn.Conn().Deallocate(ctx, forget)
		}
	}()
	res, err := pl.GetResults()
	if err == nil {
		if _, ok := res.(*pgconn.PipelineSync); !ok {
			err = fmt.Errorf("pipeline answered %T, not the commit", res)
		}
	}
	if cerr := pl.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		p.err = fmt.Errorf("pgqueue: commit of the leases: %w", err)
	}
}
