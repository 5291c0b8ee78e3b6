package sqlitencruces_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/examples/sqlite-ncruces"
	"github.com/anarchon/anarchon/sqlitebackend"
)

// A SQLite backend on ncruces/go-sqlite3's own API: the adapter is the
// two functions of sqlbackend.Conn, and sqlitebackend.NewFromConn keeps
// the version and WAL checks.
func Example() {
	dir, err := os.MkdirTemp("", "anarchon-ncruces")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	conn, err := sqlitencruces.Open(filepath.Join(dir, "anarchon.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	b, err := sqlitebackend.NewFromConn(conn, nil)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for _, token := range []string{"a", "b"} {
		ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: "report", Slot: 1, Token: token, InstanceID: token})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("claim with token %s: %v\n", token, ok)
	}
	// Output:
	// claim with token a: true
	// claim with token b: false
}
