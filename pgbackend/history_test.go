package pgbackend_test

import (
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/anarchontest"
)

// TestConformancePlain runs the suite on the SQL base with the PostgreSQL
// dialect but without the stored routines (plain transactions only), as a
// version of anarchon without them decides.
func TestConformancePlain(t *testing.T) {
	serverURL(t)
	if testing.Short() {
		t.Skip("the pool run covers the same statements in -short mode")
	}
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			schema := freshSchema(t)
			out := make([]anarchon.Backend, n)
			for i := range out {
				out[i] = plainBase(t, schema)
			}
			return out
		},
		Lease: 300 * time.Millisecond,
	})
}
