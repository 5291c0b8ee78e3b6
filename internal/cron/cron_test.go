package cron

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

type nextVector struct {
	line  int
	expr  string
	zone  string
	after string
	want  []string
}

func readNextVectors(t *testing.T) []nextVector {
	t.Helper()
	f, err := os.Open("testdata/next.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vs []nextVector
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "|")
		if len(cols) != 4 {
			t.Fatalf("next.txt:%d: want 4 columns, got %d", n, len(cols))
		}
		vs = append(vs, nextVector{
			line:  n,
			expr:  strings.TrimSpace(cols[0]),
			zone:  strings.TrimSpace(cols[1]),
			after: strings.TrimSpace(cols[2]),
			want:  strings.Fields(cols[3]),
		})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return vs
}

func TestNextVectors(t *testing.T) {
	vs := readNextVectors(t)
	if len(vs) < 150 {
		t.Errorf("only %d vectors", len(vs))
	}
	for _, v := range vs {
		e, err := Parse(v.expr)
		if err != nil {
			t.Errorf("next.txt:%d: Parse(%q): %v", v.line, v.expr, err)
			continue
		}
		loc, err := time.LoadLocation(v.zone)
		if err != nil {
			t.Errorf("next.txt:%d: %v", v.line, err)
			continue
		}
		after, err := time.Parse(time.RFC3339Nano, v.after)
		if err != nil {
			t.Errorf("next.txt:%d: %v", v.line, err)
			continue
		}
		cur := after
		for i, w := range v.want {
			got := e.Next(cur, loc)
			if gs := got.In(loc).Format(time.RFC3339); gs != w {
				t.Errorf("next.txt:%d: %q in %s, result %d after %s: got %s, want %s",
					v.line, v.expr, v.zone, i+1, cur.In(loc).Format(time.RFC3339Nano), gs, w)
				break
			}
			if got.Location() != loc {
				t.Errorf("next.txt:%d: result not in %s", v.line, v.zone)
			}
			cur = got
		}
	}
}

func TestParseErrorVectors(t *testing.T) {
	f, err := os.Open("testdata/errors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	count := 0
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "|")
		if len(cols) < 4 {
			t.Fatalf("errors.txt:%d: want at least 4 columns", n)
		}
		in, err := strconv.Unquote(strings.TrimSpace(cols[0]))
		if err != nil {
			t.Fatalf("errors.txt:%d: %v", n, err)
		}
		pos, _ := strconv.Atoi(strings.TrimSpace(cols[1]))
		field := strings.TrimSpace(cols[2])
		msg := strings.TrimSpace(cols[3])
		never := len(cols) > 4 && strings.TrimSpace(cols[4]) == "never"
		count++

		e, err := Parse(in)
		if err == nil {
			t.Errorf("errors.txt:%d: Parse(%q) = %q, want an error", n, in, e)
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("errors.txt:%d: Parse(%q) error %T is not *ParseError", n, in, err)
			continue
		}
		if pe.Expr != in || pe.Pos != pos || pe.Field != field || !strings.Contains(pe.Msg, msg) {
			t.Errorf("errors.txt:%d: Parse(%q) = %+v, want pos %d field %q msg containing %q",
				n, in, *pe, pos, field, msg)
		}
		if got := errors.Is(err, ErrNeverFires); got != never {
			t.Errorf("errors.txt:%d: errors.Is(ErrNeverFires) = %v", n, got)
		}
		if pe.Msg != strings.ToLower(pe.Msg[:1])+pe.Msg[1:] {
			t.Errorf("errors.txt:%d: message %q does not start in lower case", n, pe.Msg)
		}
	}
	if count < 40 {
		t.Errorf("only %d error vectors", count)
	}
}

func TestParseErrorString(t *testing.T) {
	_, err := Parse("*/90 * * * *")
	want := `cron: "*/90 * * * *" at 0 (minute): step 90 is larger than the range 0-59`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	_, err = Parse("0 0 *")
	want = `cron: "0 0 *" at 5: expected 5 or 6 fields, got 3`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestAccessors(t *testing.T) {
	cases := []struct {
		in      string
		str     string
		every   time.Duration
		seconds bool
		fixed   bool
	}{
		{"0 2 * * *", "0 2 * * *", 0, false, true},
		{"  0\t2  * *   * ", "0 2 * * *", 0, false, true},
		{"*/5 * * * *", "*/5 * * * *", 0, false, false},
		{"0 * * * *", "0 * * * *", 0, false, false},
		{"30 0 12 * * *", "30 0 12 * * *", 0, true, true},
		{"* 0 12 * * *", "* 0 12 * * *", 0, true, true},
		{"0 */5 12 * * *", "0 */5 12 * * *", 0, true, false},
		{"@Daily", "@daily", 0, false, true},
		{"@hourly", "@hourly", 0, false, false},
		{"@every 90m", "@every 1h30m0s", 90 * time.Minute, false, false},
	}
	for _, c := range cases {
		e, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if e.String() != c.str || e.Every() != c.every || e.HasSeconds() != c.seconds || e.fixed != c.fixed {
			t.Errorf("Parse(%q): String %q Every %v HasSeconds %v fixed %v", c.in, e.String(), e.Every(), e.HasSeconds(), e.fixed)
		}
	}
}

func TestNextNilLocation(t *testing.T) {
	e := MustParseForTest(t, "0 0 * * *")
	got := e.Next(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), nil)
	if want := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestNextFarFuture covers years past the last explicit transition in the
// tz data, where offsets come from the zone's rule string.
func TestNextFarFuture(t *testing.T) {
	loc, _ := time.LoadLocation("America/New_York")
	e := MustParseForTest(t, "0 2 * * *")
	// In 2040 DST starts on 11 March (second Sunday).
	got := e.Next(time.Date(2040, 3, 10, 12, 0, 0, 0, loc), loc)
	if s := got.Format(time.RFC3339); s != "2040-03-11T03:00:00-04:00" {
		t.Errorf("got %s", s)
	}
	e = MustParseForTest(t, "0 0 * * *")
	got = e.Next(time.Date(2040, 12, 30, 12, 0, 0, 0, loc), loc)
	for i, want := range []string{"2040-12-31T00:00:00-05:00", "2041-01-01T00:00:00-05:00", "2041-01-02T00:00:00-05:00"} {
		if s := got.Format(time.RFC3339); s != want {
			t.Errorf("%d: got %s want %s", i, s, want)
		}
		got = e.Next(got, loc)
	}
}

func BenchmarkNext(b *testing.B) {
	ny, _ := time.LoadLocation("America/New_York")
	cases := []struct {
		name, expr string
		loc        *time.Location
	}{
		{"every-minute-UTC", "* * * * *", time.UTC},
		{"daily-NewYork", "0 2 * * *", ny},
		{"weekdays-NewYork", "30 9 * * MON-FRI", ny},
		{"last-friday-NewYork", "0 0 * * 5L", ny},
		{"leap-day-UTC", "0 0 29 2 *", time.UTC},
	}
	for _, c := range cases {
		e, err := Parse(c.expr)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			t := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				t = e.Next(t, c.loc)
				if t.Year() > 2400 {
					t = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
				}
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := Parse("0 9-17/2 * JAN-NOV MON-FRI"); err != nil {
			b.Fatal(err)
		}
	}
}
