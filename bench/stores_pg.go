package bench

import (
	"context"
	"fmt"
	"sync"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/pgbackend"
	"github.com/jackc/pgx/v5/pgxpool"
)

func init() { register("postgres", openPostgres) }

func openPostgres(ctx context.Context, workdir, ns string, owner bool) (*Store, error) {
	url, err := needEnv("ANARCHON_TEST_POSTGRES_URL")
	if err != nil {
		return nil, err
	}
	prefix := "bench" + ns + "_"
	var cl closers
	var statsOnce sync.Once
	var stats *pgxpool.Pool
	var statsErr error
	return &Store{
		Server: []string{"postgres"},
		Name:   "postgres",
		NS:     ns,
		Ops: func(ctx context.Context) (int64, string, error) {
			statsOnce.Do(func() {
				if stats, statsErr = pgxpool.New(ctx, url); statsErr == nil {
					cl.add(stats.Close)
					// Present when the server preloads it
					// (scripts/services/postgres.sh does where it can).
					_, _ = stats.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`)
				}
			})
			if statsErr != nil {
				return 0, "", statsErr
			}
			var n int64
			err := stats.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
				WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n)
			if err == nil {
				return n, "statements (pg_stat_statements calls, top level)", nil
			}
			err = stats.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`).Scan(&n)
			return n, "transactions (pg_stat_database xact_commit + xact_rollback; pg_stat_statements is not loaded)", err
		},
		Open: func(ctx context.Context) (anarchon.Backend, error) {
			return cl.backend(pgbackend.Open(ctx, url, &pgbackend.Options{Prefix: prefix}))
		},
		Raw: func(ctx context.Context) (RawClaimer, error) {
			pool, err := pgxpool.New(ctx, url)
			if err != nil {
				return nil, fmt.Errorf("bench: postgres pool: %w", err)
			}
			table := prefix + "raw"
			_, err = pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (
				job text NOT NULL, slot bigint NOT NULL, token text NOT NULL, instance text NOT NULL,
				PRIMARY KEY (job, slot))`)
			if err != nil && !pgbackend.IsAlreadyCreated(err) {
				pool.Close()
				return nil, fmt.Errorf("bench: create raw table: %w", err)
			}
			cl.add(pool.Close)
			return &pgRaw{pool: pool, q: `INSERT INTO ` + table + ` (job, slot, token, instance) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`}, nil
		},
		Close: cl.close,
	}, nil
}

// pgRaw is INSERT … ON CONFLICT DO NOTHING, won when a row was inserted.
type pgRaw struct {
	pool *pgxpool.Pool
	q    string
}

func (r *pgRaw) Claim(ctx context.Context, job string, slot int64, token string) (bool, error) {
	tag, err := r.pool.Exec(ctx, r.q, job, slot, token, "bench")
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}
