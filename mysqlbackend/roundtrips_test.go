package mysqlbackend_test

import (
	"database/sql"
	"testing"

	"github.com/anarchon/anarchon/mysqlbackend"
	"github.com/anarchon/anarchon/sqlbackend/sqlbackendtest"
)

// TestClaimRoundTrips counts the statements of each kind of claim (the
// package doc's Performance). Without RETURNING every plain claim is its
// INSERT and one read of the slot's row and the clock; a lease claim is a
// READ COMMITTED transaction, whose BEGIN the driver sends as two
// statements (SET TRANSACTION ISOLATION LEVEL, START TRANSACTION), one
// more than counted here.
func TestClaimRoundTrips(t *testing.T) {
	prefix := freshPrefix(t)
	db, err := sql.Open("mysql", withParam(serverDSN(t), "time_zone=%27%2B00%3A00%27"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := sqlbackendtest.Count(mysqlbackend.Conn(db))
	b, err := mysqlbackend.New(c, &mysqlbackend.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	sqlbackendtest.ClaimRoundTrips(t, b, c, sqlbackendtest.ClaimStatements{
		Won: 2, Lost: 2, Early: 2, Trimmed: 2, PausedLoser: 2,
		// BEGIN, lock (read) the job row, read the run row, read the
		// control row, insert, take the fence, COMMIT; BEGIN, job, run,
		// COMMIT.
		LeaseWon: 7, LeaseRunning: 4,
	})
}

// TestBatchRoundTrips counts the statements of claim batches: one
// transaction per batch, in which each claim runs the statements it runs
// alone (MySQL has no stored routines here), so a batch saves the
// transaction's BEGIN and COMMIT of every lease claim but one; a plain
// batch first reads its slots' rows in one SELECT, which answers the
// slots already held without the transaction.
func TestBatchRoundTrips(t *testing.T) {
	prefix := freshPrefix(t)
	db, err := sql.Open("mysql", withParam(serverDSN(t), "time_zone=%27%2B00%3A00%27"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := sqlbackendtest.Count(mysqlbackend.Conn(db))
	b, err := mysqlbackend.New(c, &mysqlbackend.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	plus := func(c, k int64) func(int) int64 { return func(n int) int64 { return c + k*int64(n) } }
	per := func(k int64) func(int) int64 { return plus(2, k) }
	// A batch first reads the rows of its slots (one SELECT) and decides
	// in the transaction only the slots that row does not answer: a plain
	// claim's slot without a row, a lease claim's slot without a row or
	// whose lease it may take over or renew.
	one := func(int) int64 { return 1 }
	sqlbackendtest.BatchRoundTrips(t, b, c, sqlbackendtest.BatchStatements{
		Won: plus(3, 2), Lost: one, LeaseWon: plus(3, 5), LeaseRunning: one,
		Results: per(5), Heartbeats: per(2), Finishes: per(6),
	})
}
