package pgbackend_test

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/pgbackend"
	"github.com/anarchon/anarchon/sqlbackend"
	"github.com/jackc/pgx/v5/pgxpool"
)

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestReplicationSingle reads the replication of the test server, a single
// server without standbys, with synchronous_commit as the server has it
// (postgres.sh starts it with off, for speed) and as a connection string
// sets it, through a pgx pool and through database/sql.
func TestReplicationSingle(t *testing.T) {
	base := serverURL(t)
	schema := freshSchema(t)
	ctx := context.Background()
	tests := []struct {
		name string
		sc   string // synchronous_commit set by the connection string, "" for the server's
		db   bool   // through database/sql
	}{
		{"server setting", "", false},
		{"on", "on", false},
		{"off", "off", false},
		{"local", "local", false},
		{"on, database/sql", "on", true},
		{"off, database/sql", "off", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := base
			if tt.sc != "" {
				// pgx reads a '+' in a query literally: spaces as %20.
				u += "&options=-c%20synchronous_commit%3D" + tt.sc
			}
			var logs syncBuffer
			opts := &pgbackend.Options{Schema: schema, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			var b *pgbackend.Backend
			if tt.db {
				db, err := sql.Open("pgx", u)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				if b, err = pgbackend.NewFromDB(db, opts); err != nil {
					t.Fatal(err)
				}
			} else {
				var err error
				if b, err = pgbackend.Open(ctx, u, opts); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() { b.Close(ctx) })
			if got := b.Replication().Topology; got != "" {
				t.Errorf("before Init: topology %q, want none", got)
			}
			if err := b.Init(ctx); err != nil {
				t.Fatal(err)
			}
			r := b.Replication()
			t.Logf("%s; log: %s", r, logs.String())
			if r.Topology != pgbackend.TopologySingle || len(r.Standbys) != 0 || r.SynchronousStandbyNames != "" {
				t.Fatalf("got %+v, want a single server", r)
			}
			if tt.sc != "" && r.SynchronousCommit != tt.sc {
				t.Errorf("synchronous_commit %q, want %q", r.SynchronousCommit, tt.sc)
			}
			off := r.SynchronousCommit == "off"
			if r.Safe == off {
				t.Errorf("safe %v with synchronous_commit=%s", r.Safe, r.SynchronousCommit)
			}
			warned := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "synchronous_commit=off: a crash of the server can lose acknowledged claims")
			if warned != off || (len(r.Warnings) > 0) != off {
				t.Errorf("synchronous_commit=%s: warnings %q, log %q", r.SynchronousCommit, r.Warnings, logs.String())
			}
		})
	}
}

// refusingConn is the backend's own pool as a sqlbackend.Conn, except that
// the replication query fails as it does for a role without SELECT on
// pg_stat_replication or pg_replication_slots (SQLSTATE 42501).
type refusingConn struct{ sqlbackend.Conn }

func (c refusingConn) All(ctx context.Context, q string, args ...any) ([][]any, error) {
	if strings.Contains(q, "pg_stat_replication") {
		return nil, sqlState("42501")
	}
	return c.Conn.All(ctx, q, args...)
}

// A role that may not read the replication views still gets a backend:
// Init logs a WARN and goes on, and Replication reports nothing.
func TestReplicationNotReadable(t *testing.T) {
	u := serverURL(t)
	schema := freshSchema(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var logs syncBuffer
	b, err := pgbackend.NewFromConn(refusingConn{pgbackend.Pool(pool)}, &pgbackend.Options{Schema: schema, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	if err := b.Init(ctx); err != nil {
		t.Fatalf("Init: %v", err)
	}
	if r := b.Replication(); r.Topology != "" || r.String() != "not read" {
		t.Errorf("Replication() = %+v", r)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "cannot read the server's replication settings") {
		t.Errorf("log: %q", logs.String())
	}
	if won, err := b.Claim(ctx, anarchon.ClaimInput{Job: "j", Slot: time.Now().UnixMilli(), Token: "t1"}); err != nil || !won {
		t.Errorf("Claim after Init: %v, %v", won, err)
	}
}
