package cron

import (
	"archive/zip"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
	_ "time/tzdata"
)

// zoneNames lists the zones of the tz database that Go ships.
func zoneNames(t *testing.T) []string {
	t.Helper()
	root := os.Getenv("GOROOT")
	if root == "" {
		if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
			root = strings.TrimSpace(string(out))
		}
	}
	zr, err := zip.OpenReader(filepath.Join(root, "lib", "time", "zoneinfo.zip"))
	if err != nil {
		t.Logf("zoneinfo.zip not found (%v); using a fixed list", err)
		return []string{"UTC", "America/New_York", "America/Santiago", "Australia/Lord_Howe",
			"Europe/Dublin", "Europe/London", "Europe/Berlin", "Australia/Sydney",
			"Pacific/Auckland", "Pacific/Apia", "Pacific/Kiritimati", "Asia/Kolkata",
			"America/St_Johns", "Africa/Casablanca", "Antarctica/Troll"}
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, "/") {
			names = append(names, f.Name)
		}
	}
	sort.Strings(names)
	return names
}

// refDayMatch decides the day fields with the time package, independently of
// the bitset code in dayMask.
func refDayMatch(e *Expr, y int, m time.Month, d int) bool {
	date := func(day int) time.Time { return time.Date(y, m, day, 12, 0, 0, 0, time.UTC) }
	dim := time.Date(y, m+1, 0, 12, 0, 0, 0, time.UTC).Day()
	wd := int(date(d).Weekday())
	nearest := func(n int) int {
		switch date(n).Weekday() {
		case time.Saturday:
			if n == 1 {
				return 3
			}
			return n - 1
		case time.Sunday:
			if n == dim {
				return n - 2
			}
			return n + 1
		}
		return n
	}
	domOK := e.dom&(1<<uint(d)) != 0
	for n := 0; n <= 30; n++ {
		if e.lastDays&(1<<uint(n)) != 0 && d == dim-n {
			domOK = true
		}
	}
	for n := 1; n <= dim; n++ {
		if e.wDays&(1<<uint(n)) != 0 && nearest(n) == d {
			domOK = true
		}
	}
	if e.lastWeekday && nearest(dim) == d {
		domOK = true
	}
	dowOK := e.dow&(1<<uint(wd)) != 0 ||
		e.lastDow&(1<<uint(wd)) != 0 && d+7 > dim ||
		e.nthDow[wd]&(1<<uint((d-1)/7+1)) != 0
	if e.domStar || e.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}

// refMatch reports whether wall time c (seconds, read as UTC) matches e.
func refMatch(e *Expr, c int64) bool {
	t := time.Unix(c, 0).UTC()
	return e.sec&(1<<uint(t.Second())) != 0 &&
		e.min&(1<<uint(t.Minute())) != 0 &&
		e.hour&(1<<uint(t.Hour())) != 0 &&
		e.month&(1<<uint(t.Month())) != 0 &&
		refDayMatch(e, t.Year(), t.Month(), t.Day())
}

type refPeriod struct{ start, end, off int64 }

// refPeriods finds the zone periods covering [a, b] by sampling the UTC
// offset every 15 minutes and bisecting each change to the second; it does
// not use ZoneBounds.
func refPeriods(loc *time.Location, a, b int64) []refPeriod {
	offAt := func(u int64) int64 {
		_, off := time.Unix(u, 0).In(loc).Zone()
		return int64(off)
	}
	ps := []refPeriod{{math.MinInt64, math.MaxInt64, offAt(a)}}
	const step = 900
	for u := a; u < b; u += step {
		o1, o2 := offAt(u), offAt(u+step)
		if o1 == o2 {
			continue
		}
		lo, hi := u, u+step
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if offAt(mid) == o1 {
				lo = mid
			} else {
				hi = mid
			}
		}
		ps[len(ps)-1].end = hi
		ps = append(ps, refPeriod{hi, math.MaxInt64, o2})
	}
	return ps
}

// refSlots computes by brute force every slot in [a, b]: it scans every wall
// time (by the minute, or by the second for a six-field expression) that can
// map into the window and applies the DST rules literally.
func refSlots(e *Expr, loc *time.Location, a, b int64) []int64 {
	ps := refPeriods(loc, a-3*86400, b+3*86400)
	minOff, maxOff := int64(math.MaxInt64), int64(math.MinInt64)
	for _, p := range ps {
		minOff = min(minOff, p.off)
		maxOff = max(maxOff, p.off)
	}
	res := int64(60)
	if e.seconds {
		res = 1
	}
	lo := floorDiv(a+minOff, res) * res
	hi := b + maxOff
	var slots []int64
	for c := lo; c <= hi; c += res {
		if !refMatch(e, c) {
			continue
		}
		var valid []int64
		for _, p := range ps {
			if in := c - p.off; in >= p.start && in < p.end {
				valid = append(valid, in)
			}
		}
		sort.Slice(valid, func(i, j int) bool { return valid[i] < valid[j] })
		switch {
		case !e.fixed:
			slots = append(slots, valid...)
		case len(valid) > 0:
			slots = append(slots, valid[0])
		default:
			for i := 1; i < len(ps); i++ {
				T := ps[i].start
				if ps[i].off > ps[i-1].off && T+ps[i-1].off <= c && c < T+ps[i].off {
					slots = append(slots, T)
					break
				}
			}
		}
	}
	sort.Slice(slots, func(i, j int) bool { return slots[i] < slots[j] })
	var out []int64
	for i, s := range slots {
		if (i == 0 || s != slots[i-1]) && s >= a && s <= b {
			out = append(out, s)
		}
	}
	return out
}

// checkWindow compares Next, applied repeatedly from a, with the brute-force
// slots in (a, b].
func checkWindow(t *testing.T, e *Expr, loc *time.Location, a, b int64) {
	t.Helper()
	want := refSlots(e, loc, a, b)
	cur := time.Unix(a, 0)
	for i := 0; ; i++ {
		got := e.Next(cur, loc)
		if !got.After(cur) {
			t.Fatalf("%q in %s: Next(%v) = %v, not after", e, loc, cur, got)
		}
		for len(want) > 0 && want[0] <= cur.Unix() {
			want = want[1:]
		}
		if len(want) == 0 {
			if got.Unix() <= b {
				t.Fatalf("%q in %s: Next(%v) = %v, brute force finds nothing up to %v",
					e, loc, cur.In(loc), got, time.Unix(b, 0).In(loc))
			}
			return
		}
		if got.Unix() != want[0] {
			t.Fatalf("%q in %s: Next(%v) = %v, brute force says %v",
				e, loc, cur.In(loc), got, time.Unix(want[0], 0).In(loc))
		}
		cur = got
	}
}

var propExprs = []string{
	"0 2 * * *",
	"30 1 * * *",
	"*/15 * * * *",
	"0 * * * *",
	"0,30 0-3 * * *",
	"0 0 * * *",
	"15 2 * * 0",
	"0 0 L * *",
	"0 3 * * 5L",
	"*/7 1-2 * * *",
	"0 0 1W,15W * *",
	"45 23 * * *",
	"0 12 * * MON-FRI",
	"30 2 1/3 * *",
	"0 0,12 * * *",
	"5 1 * * *",
	"59 23 * * *",
	"0-59/10 1,2 * * *",
	"0 22-2 * * *",
	"0 0 * * SUN#1,FRI#5",
	"20 3 LW * *",
	"@hourly",
	"@daily",
}

var propExprsSec = []string{
	"30 0 2 * * *",
	"*/20 0 2 * * *",
	"0 */10 * * * *",
	"15 30 1 * * *",
}

func TestNextAgainstBruteForceAllZones(t *testing.T) {
	names := zoneNames(t)
	rng := rand.New(rand.NewSource(20260308))
	var exprs, exprsSec []*Expr
	for _, s := range propExprs {
		exprs = append(exprs, MustParseForTest(t, s))
	}
	for _, s := range propExprsSec {
		exprsSec = append(exprsSec, MustParseForTest(t, s))
	}
	perZone := 3
	if testing.Short() {
		perZone = 1
	}
	lo := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for zi, name := range names {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Errorf("LoadLocation(%q): %v", name, err)
			continue
		}
		for k := 0; k < perZone; k++ {
			r := lo + rng.Int63n(hi-lo)
			// Start shortly before a transition when the zone has one.
			a := r
			if p := periodAt(r, loc); p.end != math.MaxInt64 {
				a = p.end - rng.Int63n(12*3600)
			}
			e := exprs[rng.Intn(len(exprs))]
			checkWindow(t, e, loc, a, a+36*3600)
			if k == 0 && zi%4 == 0 {
				e := exprsSec[rng.Intn(len(exprsSec))]
				checkWindow(t, e, loc, a, a+16*3600)
			}
			// Plain random instant: strictly increasing results that match.
			e = exprs[rng.Intn(len(exprs))]
			cur := time.Unix(r, int64(rng.Intn(1e9)))
			for i := 0; i < 5; i++ {
				n := e.Next(cur, loc)
				if !n.After(cur) {
					t.Fatalf("%q in %s: Next(%v) = %v", e, name, cur, n)
				}
				if !matchesOrGap(e, n, loc) {
					t.Fatalf("%q in %s: Next(%v) = %v does not match", e, name, cur, n.In(loc))
				}
				cur = n
			}
		}
	}
}

// matchesOrGap reports whether n is a wall time e matches, or (for a
// fixed-time expression) a transition instant that ends a gap containing a
// matching wall time.
func matchesOrGap(e *Expr, n time.Time, loc *time.Location) bool {
	_, off := n.In(loc).Zone()
	if refMatch(e, n.Unix()+int64(off)) {
		return true
	}
	if !e.fixed {
		return false
	}
	_, prev := n.Add(-time.Second).In(loc).Zone()
	for c := n.Unix() + int64(prev); c < n.Unix()+int64(off); c++ {
		if refMatch(e, c) {
			return true
		}
	}
	return false
}

// MustParseForTest parses s or fails the test.
func MustParseForTest(t testing.TB, s string) *Expr {
	t.Helper()
	e, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return e
}

// TestNextRandomExprsUTCAndNewYork cross-checks random expressions over long
// windows in two zones.
func TestNextRandomExprs(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	zones := []string{"UTC", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "Europe/Dublin"}
	n := 150
	if testing.Short() {
		n = 30
	}
	for i := 0; i < n; i++ {
		s := randomExpr(rng, false)
		e, err := Parse(s)
		if err != nil {
			continue
		}
		loc, _ := time.LoadLocation(zones[rng.Intn(len(zones))])
		a := time.Date(2020+rng.Intn(10), time.Month(1+rng.Intn(12)), 1+rng.Intn(28), rng.Intn(24), 0, 0, 0, loc).Unix()
		checkWindow(t, e, loc, a, a+4*86400)
	}
}

func randomField(rng *rand.Rand, lo, hi int) string {
	switch rng.Intn(6) {
	case 0:
		return "*"
	case 1:
		return "*/" + itoa(1+rng.Intn(hi))
	case 2:
		a, b := lo+rng.Intn(hi-lo+1), lo+rng.Intn(hi-lo+1)
		return itoa(a) + "-" + itoa(b)
	case 3:
		a, b := lo+rng.Intn(hi-lo+1), lo+rng.Intn(hi-lo+1)
		return itoa(a) + "," + itoa(b)
	case 4:
		return itoa(lo+rng.Intn(hi-lo+1)) + "/" + itoa(1+rng.Intn(hi))
	}
	return itoa(lo + rng.Intn(hi-lo+1))
}

func itoa(n int) string {
	return strings.TrimSpace(strings.Replace(time.Duration(n).String(), "ns", "", 1))
}

func randomExpr(rng *rand.Rand, seconds bool) string {
	f := []string{
		randomField(rng, 0, 59),
		randomField(rng, 0, 23),
		[]string{"*", "L", "15W", "LW", "L-2", randomField(rng, 1, 31)}[rng.Intn(6)],
		randomField(rng, 1, 12),
		[]string{"*", "?", "5L", "MON#2", "1#5", randomField(rng, 0, 7)}[rng.Intn(6)],
	}
	if seconds {
		f = append([]string{randomField(rng, 0, 59)}, f...)
	}
	return strings.Join(f, " ")
}
