package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
	"github.com/anarchon/anarchon/sqlitefile"
)

// RawClaimer is a store's bare atomic "write unless it exists" operation,
// the floor anarchon's claim is measured against. Claim returns true if
// (job, slot) was written by this call.
// Its connection belongs to the Store, which releases it in Close.
type RawClaimer interface {
	Claim(ctx context.Context, job string, slot int64, token string) (bool, error)
}

// Store opens backends and raw claimers on one shared store.
type Store struct {
	// Name is the backend's name in tables: "memory", "sqlite", "redis",
	// "nats", "postgres".
	Name string
	// Open returns a backend for one instance: its own connection where
	// the store has connections (the memory store is shared).
	Open func(ctx context.Context) (anarchon.Backend, error)
	// Raw returns the store's raw atomic operation on its own connection.
	Raw func(ctx context.Context) (RawClaimer, error)
	// Close releases what Open and Raw share (files, the shared memory
	// store).
	Close func()
	// NS is the namespace of this store's data (its table or key prefix,
	// bucket suffix or file), for [JoinStore] in other processes.
	NS string
	// Ops, where set, reads a counter the server itself keeps of the
	// requests clients send it, and says what it counts (for tables); the
	// burst part reports its growth. Nil for stores without a server
	// (memory, SQLite) or without access to its statistics.
	Ops func(ctx context.Context) (n int64, what string, err error)
	// Server names the store server's processes (their /proc comm names)
	// for ServerCPU: the burst part reports their CPU when they run on
	// this machine. Nil for stores without a server.
	Server []string
}

// opener builds a Store in workdir with its data under namespace ns, or
// reports why it cannot (a missing server variable). owner false leaves
// the data in place at Close (another process owns it).
type opener func(ctx context.Context, workdir, ns string, owner bool) (*Store, error)

var (
	openersMu sync.Mutex
	openers   = map[string]opener{}
)

func register(name string, o opener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	openers[name] = o
}

// StoreNames lists the stores this build can open, sorted.
func StoreNames() []string {
	openersMu.Lock()
	defer openersMu.Unlock()
	var out []string
	for n := range openers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ErrNoServer is returned by OpenStore when the store's server variable
// (ANARCHON_TEST_REDIS_ADDR, …) is not set.
var ErrNoServer = errors.New("bench: server not configured")

// OpenStore opens the named store with its data under workdir. Server
// stores read their address from the same variables as anarchon's
// integration tests; without it the error wraps ErrNoServer and names the
// variable.
func OpenStore(ctx context.Context, name, workdir string) (*Store, error) {
	openersMu.Lock()
	o := openers[name]
	openersMu.Unlock()
	if o == nil {
		return nil, fmt.Errorf("bench: unknown store %q (known: %v)", name, StoreNames())
	}
	return o(ctx, workdir, strconv.FormatInt(uniq(), 36), true)
}

// JoinStore opens the named store on the data of a Store another process
// opened with OpenStore (its NS), as one more instance on it. Its Close
// closes only this process's connections; the memory store cannot be
// joined (each process has its own).
func JoinStore(ctx context.Context, name, workdir, ns string) (*Store, error) {
	openersMu.Lock()
	o := openers[name]
	openersMu.Unlock()
	if o == nil {
		return nil, fmt.Errorf("bench: unknown store %q (known: %v)", name, StoreNames())
	}
	if name == "memory" {
		return nil, errors.New("bench: the memory store lives in one process and cannot be joined")
	}
	return o(ctx, workdir, ns, false)
}

func needEnv(name string) (string, error) {
	v := os.Getenv(name)
	if v == "" {
		return "", fmt.Errorf("%w: set %s (scripts/services/*.sh print it)", ErrNoServer, name)
	}
	return v, nil
}

func init() {
	register("memory", openMemory)
	register("sqlite", openSQLite)
}

func openMemory(ctx context.Context, workdir, ns string, owner bool) (*Store, error) {
	shared := membackend.New(nil)
	return &Store{
		Name:  "memory",
		NS:    ns,
		Open:  func(context.Context) (anarchon.Backend, error) { return shared, nil },
		Raw:   func(context.Context) (RawClaimer, error) { return &memRaw{m: map[string]string{}}, nil },
		Close: func() { _ = shared.Close(context.Background()) },
	}, nil
}

// memRaw is a mutex-guarded map insert-if-absent.
type memRaw struct {
	mu sync.Mutex
	m  map[string]string
}

func (r *memRaw) Claim(_ context.Context, job string, slot int64, token string) (bool, error) {
	key := job + "\x00" + strconv.FormatInt(slot, 10)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.m[key]; ok {
		return false, nil
	}
	r.m[key] = token
	return true, nil
}

func openSQLite(ctx context.Context, workdir, ns string, owner bool) (*Store, error) {
	dir := filepath.Join(workdir, "sqlite-"+ns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "anarchon.db")
	var cl closers
	return &Store{
		Name: "sqlite",
		NS:   ns,
		Open: func(ctx context.Context) (anarchon.Backend, error) {
			return cl.backend(sqlitefile.Open(path, nil))
		},
		Raw: func(ctx context.Context) (RawClaimer, error) {
			db, err := sql.Open(sqlitefile.DriverName, sqlitefile.DSN(path, 10000))
			if err != nil {
				return nil, err
			}
			_, err = db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS bench_raw (
				job TEXT NOT NULL, slot INTEGER NOT NULL, token TEXT NOT NULL, instance TEXT NOT NULL,
				PRIMARY KEY (job, slot))`)
			if err != nil {
				db.Close()
				return nil, err
			}
			cl.add(func() { _ = db.Close() })
			return &sqlRaw{db: db, q: `INSERT INTO bench_raw (job, slot, token, instance) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`}, nil
		},
		Close: func() {
			cl.close()
			if owner {
				_ = os.RemoveAll(dir)
			}
		},
	}, nil
}

// closers collects what a Store's Open and Raw opened, for its Close to
// release. Open and Raw may be called from several goroutines.
type closers struct {
	mu sync.Mutex
	fs []func()
}

func (c *closers) add(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fs = append(c.fs, f)
}

// backend passes on what a backend's Open returned, and closes the
// backend at c.close when there is one.
func (c *closers) backend(b anarchon.Backend, err error) (anarchon.Backend, error) {
	if err != nil {
		return nil, err
	}
	c.add(func() { _ = b.Close(context.Background()) })
	return b, nil
}

// close runs every function added, in order.
func (c *closers) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.fs {
		f()
	}
}

// sqlRaw is one INSERT that skips an existing (job, slot) row (ON
// CONFLICT DO NOTHING, MySQL's INSERT IGNORE), won when a row was inserted.
type sqlRaw struct {
	db *sql.DB
	q  string
}

func (r *sqlRaw) Claim(ctx context.Context, job string, slot int64, token string) (bool, error) {
	res, err := r.db.ExecContext(ctx, r.q, job, slot, token, "bench")
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// deadline is a context bound for harness calls that must not hang.
func deadline(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

var uniqSeq struct {
	sync.Mutex
	n int64
}

// uniq returns a number unique within the process and unlikely to repeat
// across runs (it starts at the current time in ms).
func uniq() int64 {
	uniqSeq.Lock()
	defer uniqSeq.Unlock()
	if uniqSeq.n == 0 {
		uniqSeq.n = time.Now().UnixMilli()
	}
	uniqSeq.n++
	return uniqSeq.n
}
