package cron

import (
	"math/big"
	"testing"
	"time"
)

// refEvery computes the first multiple of d after the epoch strictly after
// t with arbitrary-precision integers, as a reference for nextEvery.
func refEvery(t time.Time, d time.Duration) time.Time {
	bn := big.NewInt(int64(time.Second))
	ns := new(big.Int).Mul(big.NewInt(t.Unix()), bn)
	ns.Add(ns, big.NewInt(int64(t.Nanosecond())))
	bd := big.NewInt(int64(d))
	k := new(big.Int).Div(ns, bd) // Euclidean: floor for a positive divisor
	k.Add(k, big.NewInt(1))
	next := k.Mul(k, bd)
	sec, nsec := new(big.Int).DivMod(next, bn, new(big.Int))
	return time.Unix(sec.Int64(), nsec.Int64())
}

func TestEveryAlignedOutsideUnixNanoRange(t *testing.T) {
	e, err := Parse("@every 1500ms")
	if err != nil {
		t.Fatal(err)
	}
	after := time.Date(2300, 1, 1, 0, 0, 0, 1e8, time.UTC)
	got := e.Next(after, time.UTC).Format(time.RFC3339Nano)
	if want := "2300-01-01T00:00:01.5Z"; got != want {
		t.Errorf("@every 1500ms after %s = %s, want %s", after.Format(time.RFC3339Nano), got, want)
	}
}

func TestEveryMatchesReference(t *testing.T) {
	durs := []string{"1s", "1500ms", "7s", "1.000000001s", "90m", "24h0m0.5s", "2562047h"}
	instants := []time.Time{
		time.Unix(0, 0),
		time.Unix(-1, 999999999),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1600, 2, 29, 23, 59, 59, 999999999, time.UTC),
		time.Date(1677, 9, 21, 0, 12, 43, 145224191, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 1, 499999999, time.UTC),
		time.Date(2026, 12, 1, 12, 0, 0, 1, time.UTC),
		time.Date(2262, 4, 11, 23, 47, 16, 854775807, time.UTC),
		time.Date(2300, 1, 1, 0, 0, 0, 1e8, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 750000000, time.UTC),
		time.Date(100000, 6, 1, 0, 0, 0, 3, time.UTC),
	}
	for _, ds := range durs {
		e, err := Parse("@every " + ds)
		if err != nil {
			t.Fatal(err)
		}
		d := e.Every()
		for _, at := range instants {
			cur := at
			for i := 0; i < 3; i++ {
				got, want := e.Next(cur, time.UTC), refEvery(cur, d)
				if !got.Equal(want) {
					t.Errorf("@every %s after %s: got %s, want %s", ds,
						cur.Format(time.RFC3339Nano), got.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
					break
				}
				cur = got
			}
		}
	}
}

func TestNextMultipleWithOffset(t *testing.T) {
	cases := []struct{ d, off time.Duration }{
		{time.Millisecond, 0}, {7 * time.Second, 3 * time.Second}, {1500 * time.Millisecond, 250 * time.Millisecond},
		{7 * 24 * time.Hour, 4 * 24 * time.Hour}, {time.Duration(1<<63 - 1), time.Hour},
	}
	instants := []time.Time{
		time.Unix(-15, 0), time.Unix(0, 0), time.Unix(6, 999),
		time.Date(1500, 3, 1, 0, 0, 0, 123, time.UTC),
		time.Date(2300, 1, 1, 0, 0, 0, 1e8, time.UTC),
	}
	for _, c := range cases {
		for _, at := range instants {
			got := NextMultiple(at, c.d, c.off)
			want := refEvery(at.Add(-c.off), c.d).Add(c.off)
			if !got.Equal(want) {
				t.Errorf("NextMultiple(%s, %v, %v) = %s, want %s", at.Format(time.RFC3339Nano), c.d, c.off,
					got.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
			}
		}
	}
}
