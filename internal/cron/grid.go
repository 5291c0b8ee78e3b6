package cron

import (
	"math/bits"
	"time"
)

// NextMultiple returns the first instant strictly after after of the grid
// k·d + off (k any integer) counted from the Unix epoch; d must be positive
// and off is normally in [0, d). It is exact for every instant time.Time
// holds: it works on seconds and nanoseconds apart, where a single int64 of
// nanoseconds (UnixNano) would cover only the years 1678-2262.
func NextMultiple(after time.Time, d, off time.Duration) time.Time {
	if d <= 0 {
		panic("cron: NextMultiple with a non-positive interval")
	}
	t := after.Add(-off)
	// t is sec·1e9 + nsec nanoseconds after the epoch. Its remainder modulo
	// d equals that of (sec mod d)·1e9 + nsec, whose product needs 128 bits;
	// its high word is below d, as bits.Div64 requires.
	sec := t.Unix()
	r := sec % int64(d)
	if r < 0 {
		r += int64(d)
	}
	hi, lo := bits.Mul64(uint64(r), uint64(time.Second))
	lo, carry := bits.Add64(lo, uint64(t.Nanosecond()), 0)
	hi += carry
	_, rem := bits.Div64(hi, lo, uint64(d))
	return after.Add(d - time.Duration(rem))
}
