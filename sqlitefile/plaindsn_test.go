package sqlitefile_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlitebackend"
	"github.com/anarchon/anarchon/sqlitefile"
)

// TestPlainDSN gives sqlitebackend a *sql.DB opened without any PRAGMA:
// the backend must switch to WAL, set busy timeouts and serialise writers
// itself, and must not close the caller's DB.
func TestPlainDSN(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain.db")
	ctx := t.Context()
	var dbs []*sql.DB
	var bs []*sqlitebackend.Backend
	for range 4 {
		db, err := sql.Open(sqlitefile.DriverName, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		b, err := sqlitebackend.New(db, nil)
		if err != nil {
			t.Fatal(err)
		}
		dbs, bs = append(dbs, db), append(bs, b)
	}
	for _, b := range bs {
		if err := b.Init(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var mode string
	if err := dbs[0].QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	const slots = 200
	var wins [slots]atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		b := bs[g%len(bs)]
		wg.Go(func() {
			for s := range slots {
				if s%2 == 0 {
					ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: "plain", Slot: int64(s), Token: strconv.Itoa(g), InstanceID: strconv.Itoa(g)})
					if err != nil {
						errs <- err
						return
					}
					if ok {
						wins[s].Add(1)
					}
					continue
				}
				out, err := b.Runs().Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "lease", Slot: int64(s), Token: strconv.Itoa(g), InstanceID: strconv.Itoa(g)}, Lease: time.Hour, AllowOverlap: true})
				if err != nil {
					errs <- err
					return
				}
				if out.Kind == anarchon.OutcomeWon {
					wins[s].Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for s := range wins {
		if n := wins[s].Load(); n != 1 {
			t.Errorf("slot %d: %d winners", s, n)
		}
	}
	if err := bs[0].Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := dbs[0].PingContext(ctx); err != nil {
		t.Fatalf("the backend closed the caller's DB: %v", err)
	}
}
