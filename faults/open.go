package faults

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/mysqlbackend"
	"github.com/anarchon/anarchon/natsbackend"
	"github.com/anarchon/anarchon/pgbackend"
	"github.com/anarchon/anarchon/redisbackend"
	"github.com/anarchon/anarchon/sqlitebackend"
	"github.com/anarchon/anarchon/sqlitefile"
	"github.com/go-sql-driver/mysql"
	"github.com/nats-io/nats.go"
)

// ErrBadStoreURL is returned by [Open] for a store URL it cannot use.
var ErrBadStoreURL = errors.New("faults: bad store URL")

// Open returns a backend for a store URL. The backend owns its connection:
// its Close closes it.
//
//	sqlite:/path/to/file.db     sqlitefile.Open, busy timeout 2 s
//	redis://127.0.0.1:6379      redisbackend.Open
//	nats://127.0.0.1:4222       natsbackend.Open, reconnecting for ever every 250 ms,
//	                            pinging every second (a frozen server is left
//	                            after two pings unanswered); a comma-separated
//	                            list of servers and ?replicas=N (bucket and
//	                            stream replicas, default 1) for a cluster
//	postgres://u:p@host/db      pgbackend.Open (postgresql:// too)
//	mysql://u:p@host:3306/db    mysqlbackend.Open; query parameters are the driver's
//
// Clients are set up to keep reconnecting, since the harness restarts
// servers and cuts connections under them. An unknown scheme is an error
// wrapping ErrBadStoreURL.
func Open(storeURL string) (anarchon.Backend, error) {
	scheme, rest, ok := strings.Cut(storeURL, ":")
	if !ok || rest == "" {
		return nil, fmt.Errorf("%w: %q has no scheme", ErrBadStoreURL, redact(storeURL))
	}
	switch scheme {
	case "sqlite":
		return sqlitefile.Open(rest, &sqlitebackend.Options{BusyTimeout: 2 * time.Second})
	case "redis":
		return redisbackend.Open(storeURL, nil)
	case "postgres", "postgresql":
		return pgbackend.Open(context.Background(), storeURL, nil)
	case "mysql":
		dsn, err := mysqlDSN(storeURL)
		if err != nil {
			return nil, err
		}
		return mysqlbackend.Open(dsn, nil)
	case "nats":
		servers, query, _ := strings.Cut(storeURL, "?")
		replicas := 1
		if query != "" {
			q, err := url.ParseQuery(query)
			n, aerr := strconv.Atoi(q.Get("replicas"))
			if err != nil || aerr != nil || len(q) != 1 {
				return nil, fmt.Errorf("%w: %q: the only parameter is replicas=N", ErrBadStoreURL, redact(storeURL))
			}
			replicas = n
		}
		return natsbackend.Open(servers, &natsbackend.Options{Timeout: 3 * time.Second, Replicas: replicas},
			nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond),
			nats.PingInterval(time.Second), nats.MaxPingsOutstanding(2),
			nats.RetryOnFailedConnect(false))
	}
	return nil, fmt.Errorf("%w: unknown scheme %q (want sqlite, redis, nats, postgres or mysql)", ErrBadStoreURL, scheme)
}

// redact drops the user info of a URL-like string, so that a password never
// reaches an error.
func redact(s string) string {
	at := strings.LastIndex(s, "@")
	i := strings.Index(s, "://")
	if at < 0 || i < 0 || at < i {
		return s
	}
	return s[:i+3] + "xxxxx@" + s[at+1:]
}

// mysqlDSN turns mysql://user:password@host:port/db?params into
// go-sql-driver/mysql's DSN.
func mysqlDSN(storeURL string) (string, error) {
	u, err := url.Parse(storeURL)
	if err != nil || u.Host == "" || strings.Trim(u.Path, "/") == "" {
		return "", fmt.Errorf("%w: %q: want mysql://user:password@host:port/db", ErrBadStoreURL, redact(storeURL))
	}
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", u.Host, strings.Trim(u.Path, "/")
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	dsn := cfg.FormatDSN()
	if u.RawQuery != "" {
		if strings.Contains(dsn, "?") {
			dsn += "&" + u.RawQuery
		} else {
			dsn += "?" + u.RawQuery
		}
	}
	return dsn, nil
}
