package bench

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/mysqlbackend"
	_ "github.com/go-sql-driver/mysql" // the raw claimer's driver
)

func init() { register("mysql", openMySQL) }

// openMySQL opens MySQL or MariaDB (ANARCHON_TEST_MYSQL_DSN, printed by
// scripts/services/mysql.sh). The raw claimer is INSERT IGNORE on a
// (job, slot) key, with interpolated parameters as mysqlbackend.Open uses.
func openMySQL(ctx context.Context, workdir string) (*Store, error) {
	dsn, err := needEnv("ANARCHON_TEST_MYSQL_DSN")
	if err != nil {
		return nil, err
	}
	prefix := "bench" + strconv.FormatInt(uniq(), 36) + "_"
	var mu sync.Mutex
	var closers []func()
	return &Store{
		Name: "mysql",
		Open: func(ctx context.Context) (anarchon.Backend, error) {
			b, err := mysqlbackend.Open(dsn, &mysqlbackend.Options{Prefix: prefix})
			if err != nil {
				return nil, err
			}
			mu.Lock()
			closers = append(closers, func() { _ = b.Close(context.Background()) })
			mu.Unlock()
			return b, nil
		},
		Raw: func(ctx context.Context) (RawClaimer, error) {
			sep := "?"
			if strings.Contains(dsn, "?") {
				sep = "&"
			}
			db, err := sql.Open("mysql", dsn+sep+"interpolateParams=true")
			if err != nil {
				return nil, fmt.Errorf("bench: mysql pool: %w", err)
			}
			table := "`" + prefix + "raw`"
			_, err = db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (
				job VARBINARY(1024) NOT NULL, slot BIGINT NOT NULL, token VARBINARY(512) NOT NULL,
				instance LONGBLOB NOT NULL, PRIMARY KEY (job, slot))`)
			if err != nil && !mysqlbackend.IsAlreadyCreated(err) {
				db.Close()
				return nil, fmt.Errorf("bench: create raw table: %w", err)
			}
			mu.Lock()
			closers = append(closers, func() {
				_, _ = db.Exec("DROP TABLE IF EXISTS " + table)
				db.Close()
			})
			mu.Unlock()
			return &mysqlRaw{db: db, q: `INSERT IGNORE INTO ` + table + ` (job, slot, token, instance) VALUES (?, ?, ?, ?)`}, nil
		},
		Close: func() {
			mu.Lock()
			defer mu.Unlock()
			for _, c := range closers {
				c()
			}
		},
	}, nil
}

// mysqlRaw is INSERT IGNORE, won when a row was inserted.
type mysqlRaw struct {
	db *sql.DB
	q  string
}

func (r *mysqlRaw) Claim(ctx context.Context, job string, slot int64, token string) (bool, error) {
	res, err := r.db.ExecContext(ctx, r.q, job, slot, token, "bench")
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (r *mysqlRaw) Close() error { return nil }
