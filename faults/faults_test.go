package faults_test

import "testing"

// TestSQLite runs instances on one SQLite file: kills (of the winner mid-run
// too), clock skew and a held write lock.
func TestSQLite(t *testing.T) { runStore(t, sqliteStore(t)) }

// TestRedis runs instances on a redis-server behind per-instance proxies:
// kills, clock skew, delays, a partitioned winner, cut connections and a
// server restart. Needs ANARCHON_TEST_REDIS_ADDR.
func TestRedis(t *testing.T) { runStore(t, redisStore(t)) }

// TestNATS is TestRedis on a nats-server with JetStream. Needs
// ANARCHON_TEST_NATS_URL.
func TestNATS(t *testing.T) { runStore(t, natsStore(t)) }

// TestPostgres is TestRedis on a PostgreSQL server. Needs
// ANARCHON_TEST_POSTGRES_URL.
func TestPostgres(t *testing.T) { runStore(t, pgStore(t)) }

// TestMySQL is TestRedis on a MariaDB (or MySQL) server. Needs
// ANARCHON_TEST_MYSQL_DSN.
func TestMySQL(t *testing.T) { runStore(t, mysqlStore(t)) }
