package pgbackend

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/anarchon/anarchon"
	"github.com/jackc/pgx/v5"
)

// ErrNoWatch is returned by WatchRuns when the backend cannot listen:
// Options.NoNotify is set, a *sql.DB's driver is not pgx, or the backend
// was made by NewFromConn.
var ErrNoWatch = errors.New("pgbackend: LISTEN is not available on this connection")

// WatchRuns implements anarchon.Watcher with LISTEN on a dedicated
// connection (taken out of the pool for good, or out of the *sql.DB and
// discarded afterwards). It returns once the LISTEN is in place, so every
// release or finish committed after it returns is delivered. The channel
// is closed when ctx ends or the connection fails; the scheduler then
// polls and watches again. Events are hints: they may be lost, and a
// job name longer than the NOTIFY payload limit arrives cut.
func (b *Backend) WatchRuns(ctx context.Context) (<-chan anarchon.RunEvent, error) {
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	if b.noNotify || b.pool == nil && b.db == nil {
		return nil, ErrNoWatch
	}
	out := make(chan anarchon.RunEvent, 64)
	listen := "LISTEN " + pgx.Identifier{b.channel}.Sanitize()
	if b.pool != nil {
		pc, err := b.pool.Acquire(ctx)
		if err != nil {
			return nil, b.wrap("watch", err)
		}
		conn := pc.Hijack()
		if _, err := conn.Exec(ctx, listen); err != nil {
			conn.Close(context.WithoutCancel(ctx))
			return nil, b.wrap("watch", err)
		}
		go func() {
			defer close(out)
			defer conn.Close(context.WithoutCancel(ctx))
			b.deliver(ctx, conn, out)
		}()
		return out, nil
	}
	sc, err := b.db.Conn(ctx)
	if err != nil {
		return nil, b.wrap("watch", err)
	}
	started := make(chan error, 1)
	go func() {
		defer close(out)
		defer sc.Close()
		_ = sc.Raw(func(dc any) error {
			pc, ok := dc.(interface{ Conn() *pgx.Conn })
			if !ok {
				started <- ErrNoWatch
				return nil
			}
			conn := pc.Conn()
			if _, err := conn.Exec(ctx, listen); err != nil {
				started <- err
				return driver.ErrBadConn
			}
			started <- nil
			b.deliver(ctx, conn, out)
			return driver.ErrBadConn // never reuse a listening connection
		})
	}()
	if err := <-started; err != nil {
		return nil, b.wrap("watch", err)
	}
	return out, nil
}

func (b *Backend) ready(ctx context.Context) error {
	return b.Init(ctx)
}

// wrap names the operation, hides the password and marks what a retry
// cannot fix (IsPermanent, ErrNoWatch) with anarchon.Permanent.
func (b *Backend) wrap(op string, err error) error {
	e := redact(fmt.Errorf("postgres: %s: %w", op, err), b.secret)
	if IsPermanent(err) || errors.Is(err, ErrNoWatch) {
		return anarchon.Permanent(e)
	}
	return e
}

// deliver forwards notifications until ctx ends or the connection fails.
func (b *Backend) deliver(ctx context.Context, conn *pgx.Conn, out chan<- anarchon.RunEvent) {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return
		}
		ev, ok := parsePayload(n.Payload)
		if !ok {
			continue
		}
		select {
		case out <- ev:
		case <-ctx.Done():
			return
		}
	}
}
