package mysqlbackend

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlbackend"
	"github.com/go-sql-driver/mysql"
)

// Options configures a [Backend]. The zero value (or nil) is valid.
type Options struct {
	// Prefix starts every table name; default sqlbackend.DefaultPrefix.
	Prefix string
	// Database, if set, qualifies every table name (`db`.`table`);
	// default the connection's database. Creating it is the caller's job.
	Database string
	// MaxConns bounds the connections of the pool Open makes
	// (SetMaxOpenConns), all of which it keeps open when idle
	// (SetMaxIdleConns): a claim that finds them all busy waits for one,
	// for as long as its context allows. Zero means DefaultMaxConns; it
	// must not be negative. NewFromDB and New leave the caller's pool as
	// it is.
	MaxConns int
}

// DefaultMaxConns is the size of the pool Open makes when
// Options.MaxConns is zero. database/sql's own default is no bound: a
// burst of claims (the scheduler keeps up to 64 claim calls in flight)
// would open a connection per call, and a few processes bursting at once
// would pass MySQL's default max_connections (151), which refuses the
// rest with "Too many connections". Keep processes × MaxConns, plus the
// server's other clients, below max_connections.
const DefaultMaxConns = 16

// Backend is the MySQL and MariaDB backend: the SQL base with [Dialect],
// a connection and a server check. It implements anarchon.Backend,
// anarchon.LeaseBackend (Runs), anarchon.JobChecker and
// anarchon.ServerClock, and anarchon.InstanceRegistry through the base.
type Backend struct {
	*sqlbackend.SQLBackend
	db *sql.DB
}

var (
	_ anarchon.Backend      = (*Backend)(nil)
	_ anarchon.LeaseBackend = (*Backend)(nil)
	_ anarchon.JobChecker   = (*Backend)(nil)
	_ anarchon.ServerClock  = (*Backend)(nil)
)

// Open connects to the server of dsn, in go-sql-driver/mysql's format
// (user:password@tcp(host:port)/db). It sets the session time zone to UTC
// (time_zone='+00:00', see the package doc's Guarantees) and, unless the
// DSN sets it, interpolateParams=true; it keeps other parameters. The backend closes the pool it opened. Open does no I/O:
// Init connects and checks the server.
func Open(dsn string, opts *Options) (*Backend, error) {
	maxConns := DefaultMaxConns
	if opts != nil && opts.MaxConns != 0 {
		if opts.MaxConns < 0 {
			return nil, fmt.Errorf("mysqlbackend: negative MaxConns %d", opts.MaxConns)
		}
		maxConns = opts.MaxConns
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mysqlbackend: parse DSN: %w", err)
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	// One round trip per statement instead of prepare, execute and
	// close: values are escaped by the driver, which refuses it for
	// character sets where that is unsafe.
	if !strings.Contains(dsn, "interpolateParams=") {
		cfg.InterpolateParams = true
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysqlbackend: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	b, err := newBackend(Conn(db), opts, func(context.Context) error { return db.Close() })
	if err != nil {
		db.Close()
		return nil, err
	}
	b.db = db
	return b, nil
}

// NewFromDB returns a backend on db, a pool of go-sql-driver/mysql or any
// driver for MySQL or MariaDB. The backend never closes db, and leaves its
// size to the caller: bound it (SetMaxOpenConns; Open uses
// DefaultMaxConns), or a burst of claims opens a connection per claim in
// flight.
func NewFromDB(db *sql.DB, opts *Options) (*Backend, error) {
	if db == nil {
		return nil, errors.New("mysqlbackend: db is nil")
	}
	b, err := newBackend(Conn(db), opts, nil)
	if err != nil {
		return nil, err
	}
	b.db = db
	return b, nil
}

// DB returns the pool the backend uses: Open's or NewFromDB's, nil for a
// backend made by New.
func (b *Backend) DB() *sql.DB { return b.db }

// New returns a backend on a caller's own client through the two-function
// adapter (SPEC §7). Its transactions must run at READ COMMITTED (see
// Guarantees). The backend never closes conn.
func New(conn sqlbackend.Conn, opts *Options) (*Backend, error) {
	if conn == nil {
		return nil, errors.New("mysqlbackend: conn is nil")
	}
	return newBackend(conn, opts, nil)
}

// Conn adapts db to sqlbackend.Conn with READ COMMITTED transactions.
func Conn(db *sql.DB) sqlbackend.Conn {
	return sqlbackend.DB{DB: db, TxOptions: &sql.TxOptions{Isolation: sql.LevelReadCommitted}}
}

func newBackend(conn sqlbackend.Conn, opts *Options, closeFn func(context.Context) error) (*Backend, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	base, err := sqlbackend.New(sqlbackend.Config{
		Name: "mysql", Dialect: Dialect, Conn: conn,
		Prefix: o.Prefix, Schema: o.Database,
		Check: check, Close: closeFn,
	})
	if err != nil {
		return nil, fmt.Errorf("mysqlbackend: %w", err)
	}
	return &Backend{SQLBackend: base}, nil
}

// check is the server check: MySQL 8.0 or MariaDB 10.11 and later, a
// strict sql_mode (so that over-long keys fail rather than being cut), a
// session time zone that UNIX_TIMESTAMP reads unambiguously, and InnoDB
// as the engine the tables are created with (transactions and row locks).
func check(ctx context.Context, c sqlbackend.Conn) error {
	rows, err := c.All(ctx, "SELECT VERSION(), @@SESSION.sql_mode, @@SESSION.time_zone, @@system_time_zone, @@SESSION.default_storage_engine")
	if err != nil {
		return err
	}
	if len(rows) != 1 || len(rows[0]) != 5 {
		return errors.New("mysqlbackend: the server check read no row")
	}
	var s [5]string
	for i, v := range rows[0] {
		switch x := v.(type) {
		case string:
			s[i] = x
		case []byte:
			s[i] = string(x)
		}
	}
	version, mode, zone, system, engine := s[0], s[1], s[2], s[3], s[4]
	if err := checkVersion(version); err != nil {
		return anarchon.Permanent(err)
	}
	if !strings.Contains(mode, "STRICT_TRANS_TABLES") && !strings.Contains(mode, "STRICT_ALL_TABLES") {
		return anarchon.Permanent(fmt.Errorf("mysqlbackend: sql_mode %q is not strict: set STRICT_TRANS_TABLES", mode))
	}
	utc := func(z string) bool { return z == "UTC" || z == "+00:00" || z == "GMT" || z == "Etc/UTC" }
	if !(utc(zone) || zone == "SYSTEM" && utc(system)) {
		return anarchon.Permanent(fmt.Errorf("mysqlbackend: session time_zone %q (system %q) is not UTC: add time_zone=%%27%%2B00%%3A00%%27 to the DSN, or use Open", zone, system))
	}
	if !strings.EqualFold(engine, "InnoDB") {
		return anarchon.Permanent(fmt.Errorf("mysqlbackend: default_storage_engine is %q: the tables need InnoDB's transactions and row locks", engine))
	}
	return nil
}

// checkVersion accepts MySQL 8.0+ and MariaDB 10.11+.
func checkVersion(v string) error {
	nums := strings.SplitN(strings.SplitN(v, "-", 2)[0], ".", 3)
	major, _ := strconv.Atoi(nums[0])
	minor := 0
	if len(nums) > 1 {
		minor, _ = strconv.Atoi(nums[1])
	}
	maria := strings.Contains(strings.ToLower(v), "mariadb")
	if maria && (major > 10 || major == 10 && minor >= 11) || !maria && major >= 8 {
		return nil
	}
	return fmt.Errorf("mysqlbackend: server %s is too old: MySQL 8.0 or MariaDB 10.11 is needed", v)
}
