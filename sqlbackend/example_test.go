package sqlbackend_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/anarchon/anarchon/sqlbackend"
)

// A third database with only a dialect, a connection and a server check:
// CockroachDB, through any PostgreSQL-protocol database/sql driver the
// program registers. (Compiled, not run: it needs a server.)
func ExampleNew() {
	db, err := sql.Open("pgx", "postgres://root@127.0.0.1:26257/defaultdb?sslmode=disable")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close() // the backend never closes a connection it was given

	cockroach := sqlbackend.SQLDialect{
		BigInt: "INT8",
		// The server's clock, in Unix ms, read when evaluated.
		NowMs:        "(extract(epoch from clock_timestamp()) * 1000)::INT8",
		ForUpdate:    " FOR UPDATE",
		Placeholders: sqlbackend.Dollar,
		// No advisory locks: the base's SELECT … FOR UPDATE on the job's row
		// (created by PrepareJob, or by the claim itself) serialises the
		// lease claims of a job.
		Serialize: "",
		IsAlreadyCreated: func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "already exists")
		},
	}
	b, err := sqlbackend.New(sqlbackend.Config{
		Name:    "cockroach",
		Dialect: cockroach,
		Conn:    sqlbackend.DB{DB: db},
		Check: func(ctx context.Context, c sqlbackend.Conn) error {
			rows, err := c.All(ctx, "SELECT version()")
			if err != nil {
				return err
			}
			if len(rows) != 1 || !strings.Contains(fmt.Sprint(rows[0][0]), "CockroachDB") {
				return errors.New("not a CockroachDB server")
			}
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	// b is an anarchon.Backend with leases: pass it to anarchon.New.
	if err := b.Init(context.Background()); err != nil {
		log.Fatal(err)
	}
}
