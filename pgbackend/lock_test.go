package pgbackend_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/jackc/pgx/v5"
)

// syncBuf is a log sink shared by the scheduler's goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls cond every 50 ms until it holds or 60 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A table lock on PostgreSQL that holds a claim up for longer than
// anarchon.SlowStoreCall leaves a WARN naming the job once the lock goes:
// before, nothing was logged (a 10 s lock showed nowhere) unless the claim
// failed. The lock is held, by another session, until the server says the
// claim has waited on it for longer than SlowStoreCall.
func TestTableLockLogged(t *testing.T) {
	schema := freshSchema(t)
	b := open(t, 1, 4, schema)[0]
	var logs syncBuf
	s := anarchon.New(b, &anarchon.Options{InstanceID: "locked", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ran := make(chan struct{}, 100)
	if err := s.Every("locked-job", time.Second, func(context.Context, *anarchon.Run) error {
		ran <- struct{}{}
		return nil
	}, &anarchon.JobOptions{NoLease: true}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_ = s.Stop(sctx)
	}()
	<-ran // the tables exist and claims go through

	conn, err := pgx.Connect(ctx, serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) FROM pg_tables WHERE schemaname = $1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) == 0 {
		t.Fatalf("tables of %s: %v %v", schema, tables, err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+strings.Join(tables, ", ")+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "slow store call") {
		t.Fatalf("a slow call was logged before the lock:\n%s", logs.String())
	}
	// Held until a claim of the scheduler has waited on the lock for
	// longer than SlowStoreCall, by the server's clock, as another session
	// sees it (inside the locking transaction pg_stat_activity would stay
	// as it was when first read).
	mon, err := pgx.Connect(ctx, serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close(ctx)
	waitFor(t, "a claim blocked by the lock for longer than SlowStoreCall", func() bool {
		var waited float64
		err := mon.QueryRow(ctx, `SELECT coalesce(max(extract(epoch FROM clock_timestamp() - query_start)), 0)::float8
			FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO %'`).Scan(&waited)
		if err != nil {
			t.Fatal(err)
		}
		return waited > anarchon.SlowStoreCall.Seconds()+0.2
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the slow-call WARN", func() bool { return strings.Contains(logs.String(), "slow store call") })
	var warn string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "slow store call") {
			warn = l
			break
		}
	}
	if !strings.Contains(warn, "level=WARN") || !strings.Contains(warn, "job=locked-job") || !strings.Contains(warn, "op=Claim") {
		t.Errorf("slow-call record %q: want a WARN naming the job and the claim", warn)
	}
}
