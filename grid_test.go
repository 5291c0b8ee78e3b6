package anarchon_test

import (
	"context"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// Interval slots stay on the epoch grid outside the years that an int64 of
// nanoseconds covers (1678-2262).
func TestIntervalGridFarFromEpoch(t *testing.T) {
	s := anarchon.New(membackend.New(nil), &anarchon.Options{Logger: quiet})
	h := func(context.Context, *anarchon.Run) error { return nil }
	if err := s.Cron("every1500", "@every 1500ms", h, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Every("offset", 1500*time.Millisecond, h, &anarchon.JobOptions{Offset: 250 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		job, after string
		want       []string
	}{
		{"every1500", "2300-01-01T00:00:00.1Z", []string{"2300-01-01T00:00:01.5Z", "2300-01-01T00:00:03Z"}},
		{"every1500", "1600-01-01T00:00:00Z", []string{"1600-01-01T00:00:01.5Z", "1600-01-01T00:00:03Z"}},
		{"offset", "2300-01-01T00:00:00.1Z", []string{"2300-01-01T00:00:00.25Z", "2300-01-01T00:00:01.75Z"}},
	}
	for _, c := range cases {
		after, err := time.Parse(time.RFC3339Nano, c.after)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.NextSlots(c.job, after, len(c.want))
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range c.want {
			if g := got[i].Format(time.RFC3339Nano); g != w {
				t.Errorf("%s after %s: slot %d = %s, want %s", c.job, c.after, i, g, w)
			}
		}
	}
}
