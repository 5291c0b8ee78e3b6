package cron

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

var fuzzZones = []string{
	"UTC", "America/New_York", "America/Santiago", "Australia/Lord_Howe",
	"Europe/Dublin", "Pacific/Apia", "Antarctica/Troll", "Asia/Kathmandu",
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"* * * * *", "*/15 0-6 * * MON-FRI", "0 0 L * *", "0 0 15W * *", "0 0 LW * *",
		"0 0 * * 5L", "0 0 * * MON#2", "0 22-2 * * FRI-MON/2", "0 0 1/7 * *",
		"30 0 12 * * *", "@every 90m", "@daily", "0 0 30 2 *", "*/90 * * * *",
		"0 0 ? * 0#5", "0 0 L-3 * *", "0 0 * * М", "*/М * * * *",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q): error %T is not *ParseError", s, err)
			}
			if pe.Pos < 0 || pe.Pos > len(s) {
				t.Fatalf("Parse(%q): position %d outside the input", s, pe.Pos)
			}
			_ = pe.Error()
			// A character named in the message is one of the input's
			// (not a byte of it read as a rune).
			const uc = "unexpected character "
			if i := strings.Index(pe.Msg, uc); i >= 0 {
				q, err := strconv.QuotedPrefix(pe.Msg[i+len(uc):])
				if err != nil {
					t.Fatalf("Parse(%q): message %q: character not quoted: %v", s, pe.Msg, err)
				}
				if c, _ := strconv.Unquote(q); !strings.Contains(s, c) {
					t.Fatalf("Parse(%q): message %q names a character not in the input", s, pe.Msg)
				}
			}
			return
		}
		// The normalised form must parse to the same expression.
		e2, err := Parse(e.String())
		if err != nil {
			t.Fatalf("Parse(%q) ok but Parse(String() = %q): %v", s, e.String(), err)
		}
		loc, _ := time.LoadLocation(fuzzZones[len(s)%len(fuzzZones)])
		cur := time.Date(2026, 3, 7, 12, 0, 0, 0, loc)
		for i := 0; i < 4; i++ {
			n := e.Next(cur, loc)
			if !n.After(cur) {
				t.Fatalf("%q: Next(%v) = %v", s, cur, n)
			}
			if n2 := e2.Next(cur, loc); !n2.Equal(n) {
				t.Fatalf("%q and its String %q disagree: %v vs %v", s, e.String(), n, n2)
			}
			cur = n
		}
	})
}

func FuzzNext(f *testing.F) {
	f.Add("0 2 * * *", int64(1772902800), uint8(1))  // 2026-03-07 New York
	f.Add("30 1 * * *", int64(1793505600), uint8(1)) // 2026-10-31 New York
	f.Add("0 0 * * *", int64(1788624000), uint8(2))  // 2026-09-05 Santiago
	f.Add("*/15 * * * *", int64(1775224800), uint8(3))
	f.Add("0 12 * * *", int64(1325203200), uint8(5)) // 2011-12-30 Apia
	f.Add("0 0 29 2 *", int64(4102444800), uint8(0))
	f.Add("0 0 * * 5L", int64(-2208988800), uint8(4))
	f.Add("* * * * * *", int64(1774746000), uint8(6))
	f.Add("@every 1500ms", int64(10413792001), uint8(0)) // 2300-01-01, past UnixNano
	f.Fuzz(func(t *testing.T, s string, sec int64, zone uint8) {
		e, err := Parse(s)
		if err != nil {
			return
		}
		// Keep instants within years 1000-3000.
		const lo, hi = -30610224000, 32503680000
		if sec < lo || sec > hi {
			sec = lo + (sec%(hi-lo)+(hi-lo))%(hi-lo)
		}
		loc, _ := time.LoadLocation(fuzzZones[int(zone)%len(fuzzZones)])
		cur := time.Unix(sec, 0)
		for i := 0; i < 3; i++ {
			n := e.Next(cur, loc)
			if !n.After(cur) {
				t.Fatalf("%q in %s: Next(%v) = %v", s, loc, cur, n)
			}
			if e.every > 0 && !n.Equal(refEvery(cur, e.every)) {
				t.Fatalf("%q: Next(%v) = %v, want %v", s, cur, n, refEvery(cur, e.every))
			}
			if e.every == 0 && !matchesOrGap(e, n, loc) {
				t.Fatalf("%q in %s: Next(%v) = %v does not match", s, loc, cur, n.In(loc))
			}
			cur = n
		}
		if e.every == 0 && !e.seconds && (sec-lo)%7 == 0 {
			// Full brute-force comparison for a sample of inputs.
			checkWindow(t, e, loc, sec, sec+2*86400)
		}
	})
}
