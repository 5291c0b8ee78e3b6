package cron

import (
	"math"
	"math/bits"
	"time"
)

const (
	secondsPerDay = 86400
	// maxOffset bounds the absolute UTC offset of any zone in the tz
	// database (the largest are a little under 16 hours).
	maxOffset = 18 * 3600
	// searchYears bounds the calendar search; an expression accepted by
	// Parse matches at least once in every 400-year Gregorian cycle.
	searchYears = 401
	// maxPeriods bounds the number of zone periods Next walks through.
	maxPeriods = 4096
)

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// daysFromCivil returns the number of days from 1970-01-01 to y-m-d in the
// proleptic Gregorian calendar.
func daysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := int64((m + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y int64, m, d int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	m = int(mp) + 3
	if m > 12 {
		m -= 12
	}
	y = yoe + era*400
	if m <= 2 {
		y++
	}
	return y, m, d
}

func isLeap(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y int64, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// dayMask returns the days (bits 1-31) of month m of year y that match the
// day-of-month and day-of-week fields.
func (e *Expr) dayMask(y int64, m int) uint32 {
	dim := daysIn(y, m)
	wd1 := int((daysFromCivil(y, m, 1)%7 + 11) % 7) // 1970-01-01 was a Thursday
	return e.masks[dim-28][wd1]
}

// fillMasks precomputes the day mask for every month length and weekday of
// the first of the month.
func (e *Expr) fillMasks() {
	for dim := 28; dim <= 31; dim++ {
		for wd1 := 0; wd1 < 7; wd1++ {
			e.masks[dim-28][wd1] = e.dayMaskFor(dim, wd1)
		}
	}
}

func (e *Expr) dayMaskFor(dim, wd1 int) uint32 {
	valid := uint32(1)<<uint(dim+1) - 2

	dom := e.dom & valid
	if e.lastDays != 0 {
		for n := 0; n < dim; n++ {
			if e.lastDays&(1<<uint(n)) != 0 {
				dom |= 1 << uint(dim-n)
			}
		}
	}
	if e.wDays != 0 {
		for n := 1; n <= dim; n++ {
			if e.wDays&(1<<uint(n)) != 0 {
				dom |= 1 << uint(nearestWeekday(n, dim, wd1))
			}
		}
	}
	if e.lastWeekday {
		dom |= 1 << uint(nearestWeekday(dim, dim, wd1))
	}

	var dow uint32
	for d := 0; d < 7; d++ {
		first := 1 + (d-wd1+7)%7 // first day of the month that is weekday d
		if e.dow&(1<<uint(d)) != 0 {
			for day := first; day <= dim; day += 7 {
				dow |= 1 << uint(day)
			}
		}
		if e.lastDow&(1<<uint(d)) != 0 {
			dow |= 1 << uint(first+(dim-first)/7*7)
		}
		if nth := e.nthDow[d]; nth != 0 {
			for k := 1; k <= 5; k++ {
				if nth&(1<<uint(k)) != 0 {
					if day := first + 7*(k-1); day <= dim {
						dow |= 1 << uint(day)
					}
				}
			}
		}
	}
	if e.domStar || e.dowStar {
		return dom & dow
	}
	return dom | dow
}

// nearestWeekday returns the weekday (Monday to Friday) of the month nearest
// to day n, without leaving the month.
func nearestWeekday(n, dim, wd1 int) int {
	switch (wd1 + n - 1) % 7 {
	case 6: // Saturday
		if n > 1 {
			return n - 1
		}
		return n + 2
	case 0: // Sunday
		if n < dim {
			return n + 1
		}
		return n - 2
	}
	return n
}

// canFire reports whether some day of a 400-year Gregorian cycle matches.
// The calendar repeats every 400 years, so this decides whether the
// expression ever fires. The day mask depends only on the length of the
// month and the weekday of its first day.
func (e *Expr) canFire() bool {
	if e.sec == 0 || e.min == 0 || e.hour == 0 || e.month == 0 {
		return false
	}
	var seen [4][7]bool
	for m := 1; m <= 12; m++ {
		if e.month&(1<<uint(m)) == 0 {
			continue
		}
		for y := int64(2000); y < 2400; y++ {
			dim := daysIn(y, m)
			wd1 := int((daysFromCivil(y, m, 1)%7 + 11) % 7)
			if seen[dim-28][wd1] {
				continue
			}
			seen[dim-28][wd1] = true
			if e.masks[dim-28][wd1] != 0 {
				return true
			}
		}
	}
	return false
}

// nextWall returns the smallest matching wall time c >= w with c < limit,
// where wall times are counted in seconds as if the wall clock were UTC.
func (e *Expr) nextWall(w, limit int64) (int64, bool) {
	if w >= limit {
		return 0, false
	}
	days := floorDiv(w, secondsPerDay)
	rem := int(w - days*secondsPerDay)
	y, mo, d := civilFromDays(days)
	h, mi, s := rem/3600, rem/60%60, rem%60
	y0 := y
	cacheY, cacheM, mask := int64(math.MinInt64), 0, uint32(0)
	for {
		if y > y0+searchYears {
			return 0, false
		}
		if e.month&(1<<uint(mo)) == 0 {
			rest := e.month >> uint(mo) << uint(mo)
			if rest == 0 {
				y++
				mo = bits.TrailingZeros16(e.month)
			} else {
				mo = bits.TrailingZeros16(rest)
			}
			d, h, mi, s = 1, 0, 0, 0
			if daysFromCivil(y, mo, 1)*secondsPerDay >= limit {
				return 0, false
			}
			continue
		}
		if cacheY != y || cacheM != mo {
			cacheY, cacheM, mask = y, mo, e.dayMask(y, mo)
		}
		if dm := mask >> uint(d) << uint(d); dm == 0 {
			mo++
			if mo > 12 {
				mo = 1
				y++
			}
			d, h, mi, s = 1, 0, 0, 0
			if daysFromCivil(y, mo, 1)*secondsPerDay >= limit {
				return 0, false
			}
			continue
		} else if nd := bits.TrailingZeros32(dm); nd != d {
			d, h, mi, s = nd, 0, 0, 0
			if daysFromCivil(y, mo, d)*secondsPerDay >= limit {
				return 0, false
			}
		}
		if hm := e.hour >> uint(h) << uint(h); hm == 0 {
			d, h, mi, s = d+1, 0, 0, 0
			continue
		} else if nh := bits.TrailingZeros32(hm); nh != h {
			h, mi, s = nh, 0, 0
		}
		if mm := e.min >> uint(mi) << uint(mi); mm == 0 {
			h, mi, s = h+1, 0, 0
			continue
		} else if nm := bits.TrailingZeros64(mm); nm != mi {
			mi, s = nm, 0
		}
		if sm := e.sec >> uint(s) << uint(s); sm == 0 {
			mi, s = mi+1, 0
			continue
		} else {
			s = bits.TrailingZeros64(sm)
		}
		c := daysFromCivil(y, mo, d)*secondsPerDay + int64(h*3600+mi*60+s)
		if c >= limit {
			return 0, false
		}
		return c, true
	}
}

// zonePeriod is a span of instants [start, end) with one UTC offset.
type zonePeriod struct {
	start, end int64 // math.MinInt64 / math.MaxInt64 when unbounded
	off        int64
}

func periodAt(t int64, loc *time.Location) zonePeriod {
	tt := time.Unix(t, 0).In(loc)
	_, off := tt.Zone()
	s, e := tt.ZoneBounds()
	p := zonePeriod{start: math.MinInt64, end: math.MaxInt64, off: int64(off)}
	if !s.IsZero() {
		p.start = s.Unix()
	}
	if !e.IsZero() {
		p.end = e.Unix()
	}
	if p.start > t {
		p.start = t
	}
	if p.end <= t {
		// ZoneBounds can report a stale period around the turn of a year
		// that is computed from the zone's rule string; find the end by
		// probing instead.
		p.end = nextOffsetChange(t, p.off, loc)
	}
	return p
}

func offsetAt(t int64, loc *time.Location) int64 {
	_, off := time.Unix(t, 0).In(loc).Zone()
	return int64(off)
}

// nextOffsetChange returns the first instant after t whose UTC offset is not
// off, probing day by day for up to two years and then bisecting.
func nextOffsetChange(t, off int64, loc *time.Location) int64 {
	const step = secondsPerDay
	lo := t
	for k := 0; k < 800; k++ {
		hi := lo + step
		if offsetAt(hi, loc) != off {
			for hi-lo > 1 { // offset at lo is off, at hi it is not
				mid := lo + (hi-lo)/2
				if offsetAt(mid, loc) == off {
					lo = mid
				} else {
					hi = mid
				}
			}
			return hi
		}
		lo = hi
	}
	return math.MaxInt64
}

// resolve finds the instants whose wall time in loc is c. It returns the
// earliest such instant and whether there is one; if there is none, gap is
// the first transition instant whose spring-forward skips c.
func resolve(c int64, loc *time.Location) (first int64, ok bool, gap int64, gapOK bool) {
	t := c - maxOffset
	for i := 0; i < 64; i++ {
		p := periodAt(t, loc)
		if cand := c - p.off; cand >= p.start && cand < p.end && (!ok || cand < first) {
			first, ok = cand, true
		}
		if p.end == math.MaxInt64 || p.end > c+maxOffset {
			break
		}
		np := periodAt(p.end, loc)
		if !gapOK && np.off > p.off && p.end+p.off <= c && c < p.end+np.off {
			gap, gapOK = p.end, true
		}
		t = p.end
	}
	return
}

// unique reports whether instant inst, with wall time c, is the first
// instant with that wall time; p is the zone period containing inst.
func unique(c, inst int64, p zonePeriod, loc *time.Location) bool {
	const margin = 2*maxOffset + 1
	if (p.start == math.MinInt64 || inst-p.start > margin) && (p.end == math.MaxInt64 || p.end-inst > margin) {
		return true
	}
	first, ok, _, _ := resolve(c, loc)
	return ok && first == inst
}

func addSat(a, b int64) int64 {
	if a == math.MaxInt64 || a == math.MinInt64 {
		return a
	}
	return a + b
}

// Next returns the first instant strictly after after at which the
// expression fires in loc (UTC if loc is nil), following the daylight saving
// time rules in the package documentation. The result is expressed in loc.
//
// For an @every expression Next returns the next multiple of the interval
// counted from the Unix epoch.
func (e *Expr) Next(after time.Time, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	if e.every > 0 {
		return e.nextEvery(after).In(loc)
	}
	t0 := after.Unix() + 1 // the first whole second strictly after after
	p := periodAt(t0, loc)
	var prevOff int64
	hasPrev := false
	if p.start == t0 {
		prevOff, hasPrev = periodAt(t0-1, loc).off, true
	}
	for i := 0; i < maxPeriods; i++ {
		// A fixed-time expression whose wall time is skipped by the
		// transition that starts this period fires at the transition.
		if e.fixed && hasPrev && p.off > prevOff && p.start >= t0 {
			lo, hi := p.start+prevOff, p.start+p.off
			for w := lo; ; {
				c, ok := e.nextWall(w, hi)
				if !ok {
					break
				}
				if _, exists, gap, gapOK := resolve(c, loc); !exists && gapOK && gap == p.start {
					return time.Unix(p.start, 0).In(loc)
				}
				w = c + 1
			}
		}
		lo := t0
		if p.start > lo {
			lo = p.start
		}
		limit := addSat(p.end, p.off)
		for w := lo + p.off; ; {
			c, ok := e.nextWall(w, limit)
			if !ok {
				break
			}
			inst := c - p.off
			if !e.fixed || unique(c, inst, p, loc) {
				return time.Unix(inst, 0).In(loc)
			}
			w = c + 1
		}
		if p.end == math.MaxInt64 {
			break
		}
		prevOff, hasPrev = p.off, true
		p = periodAt(p.end, loc)
	}
	// Not reached for an expression accepted by Parse and an instant within
	// the range of the calendar arithmetic.
	return time.Unix(t0, 0).In(loc)
}

func (e *Expr) nextEvery(after time.Time) time.Time {
	return NextMultiple(after, e.every, 0)
}
