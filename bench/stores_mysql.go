package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"strings"
	"sync"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/mysqlbackend"
	"github.com/go-sql-driver/mysql" // the raw claimer's driver
)

func init() { register("mysql", openMySQL) }

// openMySQL opens MySQL or MariaDB (ANARCHON_TEST_MYSQL_DSN, printed by
// scripts/services/mysql.sh). The raw claimer is INSERT IGNORE on a
// (job, slot) key, with interpolated parameters as mysqlbackend.Open uses.
func openMySQL(ctx context.Context, workdir, ns string, owner bool) (*Store, error) {
	dsn, err := needEnv("ANARCHON_TEST_MYSQL_DSN")
	if err != nil {
		return nil, err
	}
	prefix := "bench" + ns + "_"
	var cl closers
	var statsOnce sync.Once
	var stats *sql.DB
	var statsErr error
	return &Store{
		Server: []string{"mariadbd", "mysqld"},
		Name:   "mysql",
		NS:     ns,
		Ops: func(ctx context.Context) (int64, string, error) {
			statsOnce.Do(func() {
				if stats, statsErr = sql.Open("mysql", dsn); statsErr == nil {
					cl.add(func() { _ = stats.Close() })
				}
			})
			if statsErr != nil {
				return 0, "", statsErr
			}
			var name string
			var n int64
			err := stats.QueryRowContext(ctx, `SHOW GLOBAL STATUS LIKE 'Questions'`).Scan(&name, &n)
			return n, "statements sent by clients (SHOW GLOBAL STATUS Questions)", err
		},
		Open: func(ctx context.Context) (anarchon.Backend, error) {
			return cl.backend(mysqlbackend.Open(dsn, &mysqlbackend.Options{Prefix: prefix}))
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
			cl.add(func() {
				_, _ = db.Exec("DROP TABLE IF EXISTS " + table)
				db.Close()
			})
			return &sqlRaw{db: db, q: `INSERT IGNORE INTO ` + table + ` (job, slot, token, instance) VALUES (?, ?, ?, ?)`}, nil
		},
		Close: cl.close,
	}, nil
}

// QuietDrivers drops what the MySQL driver logs on its own (a line per
// broken connection), which would bury a harness's output when a server
// refuses connections; the scheduler reports those errors as events.
func QuietDrivers() { _ = mysql.SetLogger(log.New(io.Discard, "", 0)) }
