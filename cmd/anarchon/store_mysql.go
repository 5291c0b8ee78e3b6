package main

import (
	"errors"
	"net"
	"net/url"
	"strings"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/mysqlbackend"
	"github.com/go-sql-driver/mysql"
)

func init() { openers["mysql"] = openMySQL }

// openMySQL opens "mysql://user:password@host:3306/db?tls=true" (MySQL 8 or
// MariaDB 10.11+) with mysqlbackend.Open, which owns the pool. The port
// defaults to 3306; the database is required. Query parameters other than
// "prefix" are go-sql-driver/mysql's DSN parameters (tls, timeout, …).
func openMySQL(u *url.URL, _, prefix string, _ bool) (anarchon.Backend, error) {
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return nil, errors.New("the URL needs one database name as its path: mysql://user:password@host:3306/db")
	}
	cfg := mysql.NewConfig()
	cfg.Net = "tcp"
	cfg.Addr = u.Host
	if u.Port() == "" {
		cfg.Addr = net.JoinHostPort(u.Hostname(), "3306")
	}
	cfg.DBName = db
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	// The query parameters are the driver's, parsed by it as part of a DSN.
	dsn := cfg.FormatDSN()
	if u.RawQuery != "" {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		dsn += sep + u.RawQuery
	}
	return mysqlbackend.Open(dsn, &mysqlbackend.Options{Prefix: prefix})
}
