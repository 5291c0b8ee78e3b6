package main

import (
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon/bench"
)

// The load part's line gives each time in one unit whatever its size: CPU
// per fired slot in µs both below a microsecond and above a millisecond,
// CPU per second in ms, where a time.Duration would print 870ns, 1.5ms.
func TestLoadLineUnits(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    bench.Load
		want []string
	}{
		{"sub-µs per slot", bench.Load{Jobs: 10, Active: 10, Mode: bench.ModePlain, Fired: 1000, CPU: 870 * time.Microsecond, Wall: time.Second},
			[]string{"fired=1000 ", "cpu=0.870ms ", "wall=1.000s ", "fired/s=1000 ", "cpu/s=0.870ms ", "cpu/fired=0.9µs"}},
		{"ms per slot", bench.Load{Jobs: 10, Active: 10, Mode: bench.ModeLease, Fired: 2, CPU: 3 * time.Millisecond, Wall: 2 * time.Second},
			[]string{"mode=lease ", "cpu=3.000ms ", "fired/s=1 ", "cpu/s=1.500ms ", "cpu/fired=1500.0µs"}},
		{"nothing fired", bench.Load{Mode: bench.ModePlain}, []string{"fired/s=0 ", "cpu/s=", "cpu/fired=0.0µs"}},
	} {
		got := loadLine(tc.l)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
		if strings.Contains(got, "ns") {
			t.Errorf("%s: %q has a time in ns", tc.name, got)
		}
	}
}
