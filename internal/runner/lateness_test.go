package runner

import (
	"testing"
	"time"
)

// Lateness never prints a lateness past a limit as the limit or less.
func TestLateness(t *testing.T) {
	for _, tc := range []struct {
		late, limit time.Duration
		want        string
	}{
		{1383359 * time.Nanosecond, time.Millisecond, "1.383ms"},
		{2002247 * time.Nanosecond, 2 * time.Millisecond, "2.002ms"},
		{2000400 * time.Nanosecond, 2 * time.Millisecond, "2.0004ms"},
		{70123456789 * time.Nanosecond, time.Minute, "1m10.123s"},
	} {
		if got := Lateness(tc.late, tc.limit); got != tc.want {
			t.Errorf("Lateness(%v, %v) = %q, want %q", tc.late, tc.limit, got, tc.want)
		}
	}
}
