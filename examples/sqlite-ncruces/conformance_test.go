package sqlitencruces_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/anarchontest"
	"github.com/anarchon/anarchon/examples/sqlite-ncruces"
	"github.com/anarchon/anarchon/sqlitebackend"
)

// TestConformance runs anarchontest on SQLite through this adapter: n
// backends, each with its own connection to one file.
func TestConformance(t *testing.T) {
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			path := filepath.Join(t.TempDir(), "anarchon.db")
			var out []anarchon.Backend
			for range n {
				c, err := sqlitencruces.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				b, err := sqlitebackend.NewFromConn(c, nil)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, b)
			}
			return out
		},
		Lease: 300 * time.Millisecond,
		Break: func(t *testing.T, b anarchon.Backend, job string) {
			c := b.(*sqlitebackend.Backend).Conn()
			for _, table := range []string{"results", "runs", "jobs"} {
				if _, err := c.All(t.Context(), `DROP TABLE "anarchon_`+table+`"`); err != nil {
					t.Fatal(err)
				}
			}
		},
	})
}
