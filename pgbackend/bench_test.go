package pgbackend_test

import (
	"context"
	"testing"

	"github.com/anarchon/anarchon/pgbackend"
	"github.com/anarchon/anarchon/sqlbackend/sqlbackendtest"
)

// rawTable is the bare claims table of the benchmarks in be's schema.
func rawTable(be *pgbackend.Backend, schema string) sqlbackendtest.RawTable {
	pool := be.Pool()
	raw := `"` + schema + `".raw_claims`
	return sqlbackendtest.RawTable{
		Create: func(ctx context.Context) error {
			_, err := pool.Exec(ctx, `CREATE TABLE `+raw+` (job TEXT NOT NULL, slot BIGINT NOT NULL, token TEXT NOT NULL, PRIMARY KEY (job, slot))`)
			return err
		},
		Insert: func(ctx context.Context, job string, slot int64, token string) (int64, error) {
			tag, err := pool.Exec(ctx, `INSERT INTO `+raw+` (job, slot, token) VALUES ($1, $2, $3) ON CONFLICT (job, slot) DO NOTHING`, job, slot, token)
			return tag.RowsAffected(), err
		},
	}
}

// BenchmarkClaimVsRawInsert measures anarchon's plain claim against the
// bare INSERT … ON CONFLICT DO NOTHING it is built on, on the same server
// and pool in the same run, alternating them, and reports the ratio
// (claim/raw).
func BenchmarkClaimVsRawInsert(b *testing.B) {
	schema := freshSchema(b)
	be := open(b, 1, 2, schema)[0]
	sqlbackendtest.ClaimVsRawInsert(b, be, rawTable(be, schema))
}

// BenchmarkLeaseClaimVsRawInsert does the same for the lease claim (one
// transaction with an advisory lock and a row lock).
func BenchmarkLeaseClaimVsRawInsert(b *testing.B) {
	schema := freshSchema(b)
	be := open(b, 1, 2, schema)[0]
	sqlbackendtest.LeaseClaimVsRawInsert(b, be, rawTable(be, schema))
}
