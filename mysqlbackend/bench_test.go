package mysqlbackend_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/anarchon/anarchon/sqlbackend/sqlbackendtest"
)

// rawTable is the bare claims table of the benchmarks, named with prefix,
// on its own pool of the same server.
func rawTable(b *testing.B, prefix string) sqlbackendtest.RawTable {
	// Interpolated values, as Open sets: one round trip per statement.
	db, err := sql.Open("mysql", withParam(serverDSN(b), "interpolateParams=true"))
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(2)
	b.Cleanup(func() { db.Close() })
	raw := "`" + prefix + "raw_claims`"
	b.Cleanup(func() { db.Exec("DROP TABLE IF EXISTS " + raw) })
	return sqlbackendtest.RawTable{
		Create: func(ctx context.Context) error {
			_, err := db.ExecContext(ctx, "CREATE TABLE "+raw+" (job VARBINARY(1024) NOT NULL, slot BIGINT NOT NULL, token VARBINARY(512) NOT NULL, PRIMARY KEY (job, slot))")
			return err
		},
		Insert: func(ctx context.Context, job string, slot int64, token string) (int64, error) {
			res, err := db.ExecContext(ctx, "INSERT IGNORE INTO "+raw+" (job, slot, token) VALUES (?, ?, ?)", job, slot, token)
			if err != nil {
				return 0, err
			}
			return res.RowsAffected()
		},
	}
}

// BenchmarkClaimVsRawInsert measures anarchon's plain claim against the
// bare INSERT IGNORE, on the same server in the same run, alternating
// them, and reports the ratio (claim/raw).
func BenchmarkClaimVsRawInsert(b *testing.B) {
	prefix := freshPrefix(b)
	be := open(b, 1, prefix)[0]
	sqlbackendtest.ClaimVsRawInsert(b, be, rawTable(b, prefix))
}

// BenchmarkLeaseClaimVsRawInsert does the same for the lease claim (a
// READ COMMITTED transaction locking the job row, then the run row).
func BenchmarkLeaseClaimVsRawInsert(b *testing.B) {
	prefix := freshPrefix(b)
	be := open(b, 1, prefix)[0]
	sqlbackendtest.LeaseClaimVsRawInsert(b, be, rawTable(b, prefix))
}

// BenchmarkFinishResult times FinishResult against Finish then SaveResult.
func BenchmarkFinishResult(b *testing.B) {
	be := open(b, 1, freshPrefix(b))[0]
	sqlbackendtest.FinishResult(b, be)
}

func withParam(dsn, p string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + p
	}
	return dsn + "?" + p
}
