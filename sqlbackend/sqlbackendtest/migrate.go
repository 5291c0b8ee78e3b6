package sqlbackendtest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlbackend"
)

// ConcurrentMigration starts 8 handles from open on one empty database at
// once, in 5 rounds of a fresh database each: Init and then PrepareJob must
// succeed for every one of them (the schema creation of sqlbackend must
// tolerate racing instances).
func ConcurrentMigration(t *testing.T, open Open) {
	for round := range 5 {
		bs := open(t, 8)
		var wg sync.WaitGroup
		errs := make([]error, len(bs))
		start := make(chan struct{})
		for i, b := range bs {
			wg.Go(func() {
				<-start
				if err := b.Init(t.Context()); err != nil {
					errs[i] = err
					return
				}
				errs[i] = b.PrepareJob(t.Context(), anarchon.PrepareJobInput{Job: "job", HistorySize: 10})
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, instance %d: %v", round, i, err)
			}
		}
	}
}

// OldSchema checks that Init brings a database made by an older version
// up to date, with 9 handles from open on one fresh database: handle 0
// creates the tables and wins a lease claim, then the jobs table loses
// its fence column (ALTER TABLE … DROP COLUMN, through handle 0's
// connection), as a database made before fencing tokens had none. Handles
// 1 to 8, new instances, Init at once: every one must succeed (the column
// added once, racing instances tolerated), and their lease claims of new
// slots of the job must each win with a fence above the one before, on
// the job row the old version made.
func OldSchema(t *testing.T, open Open) {
	t.Helper()
	ctx := t.Context()
	bs := open(t, 9)
	base, ok := bs[0].(interface {
		Qualify(string) string
		Conn() sqlbackend.Conn
	})
	if !ok {
		t.Fatalf("%T has no Qualify and Conn: not built on sqlbackend", bs[0])
	}
	const job = "old-schema"
	slot := time.Now().Add(-time.Hour).Truncate(time.Minute).UnixMilli()
	claim := func(i int, slot int64) anarchon.ClaimOutcome {
		t.Helper()
		out, err := runs(t, bs[i]).Claim(ctx, anarchon.RunClaim{
			ClaimInput: anarchon.ClaimInput{Job: job, Slot: slot, Token: fmt.Sprintf("t%d-%d", i, slot), InstanceID: fmt.Sprintf("i%d", i)},
			Lease:      time.Minute, AllowOverlap: true,
		})
		if err != nil {
			t.Fatalf("handle %d: lease Claim: %v", i, err)
		}
		if out.Kind != anarchon.OutcomeWon {
			t.Fatalf("handle %d: lease Claim of a new slot = %+v, want won", i, out)
		}
		return out
	}
	if err := bs[0].Init(ctx); err != nil {
		t.Fatal(err)
	}
	claim(0, slot)
	if _, err := base.Conn().All(ctx, "ALTER TABLE "+base.Qualify("jobs")+" DROP COLUMN fence"); err != nil {
		t.Fatalf("drop jobs.fence: %v", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(bs))
	start := make(chan struct{})
	for i := 1; i < len(bs); i++ {
		wg.Go(func() {
			<-start
			errs[i] = bs[i].Init(ctx)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Init of handle %d on the old schema: %v", i, err)
		}
	}
	var last uint64
	for i := 1; i < len(bs); i++ {
		out := claim(i, slot+int64(i)*60_000)
		if out.Fence <= last {
			t.Fatalf("handle %d: won with Fence %d, not above the job's last fence %d", i, out.Fence, last)
		}
		last = out.Fence
	}
}
