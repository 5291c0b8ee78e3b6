package pgbackend_test

import (
	"testing"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlbackend/sqlbackendtest"
)

// TestHistoryRecords runs the history-record checks with the stored
// routines, and with the plain transactions of sqlbackend on the same
// PostgreSQL dialect.
func TestHistoryRecords(t *testing.T) {
	serverURL(t)
	t.Run("Routines", func(t *testing.T) {
		sqlbackendtest.HistoryRecords(t, func(t testing.TB, n int) []anarchon.Backend {
			return sqlbackendtest.Backends(open(t, n, 4, freshSchema(t)))
		})
	})
	t.Run("Plain", func(t *testing.T) {
		sqlbackendtest.HistoryRecords(t, func(t testing.TB, n int) []anarchon.Backend {
			schema := freshSchema(t)
			var out []anarchon.Backend
			for range n {
				out = append(out, plainBase(t, schema))
			}
			return out
		})
	})
}
