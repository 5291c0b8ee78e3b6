package anarchon_test

import (
	"slices"
	"testing"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/anarchontest"
)

// MapBackend passes the conformance suite; every backend's tests should
// run it.
func TestMapBackendConformance(t *testing.T) {
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			b := NewMapBackend()
			return slices.Repeat([]anarchon.Backend{b}, n) // one store, shared by n "clients"
		},
	})
}
