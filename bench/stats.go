package bench

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Summary is the distribution of a set of durations.
type Summary struct {
	N             int
	P50, P99, Max time.Duration
	Mean          time.Duration
}

// Summarize sorts d in place and returns its p50, p99 (nearest rank), max
// and mean. An empty d gives the zero Summary.
func Summarize(d []time.Duration) Summary {
	if len(d) == 0 {
		return Summary{}
	}
	slices.Sort(d)
	var sum time.Duration
	for _, v := range d {
		sum += v
	}
	return Summary{
		N:    len(d),
		P50:  Percentile(d, 50),
		P99:  Percentile(d, 99),
		Max:  d[len(d)-1],
		Mean: sum / time.Duration(len(d)),
	}
}

// Percentile returns the p-th percentile (0 < p <= 100, nearest-rank
// method) of sorted, which must be sorted ascending and not empty.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(p/100*float64(len(sorted))+0.999999999) - 1
	rank = max(0, min(rank, len(sorted)-1))
	return sorted[rank]
}

// Ms formats d in milliseconds with three decimals, for tables.
func Ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
}

// Us formats d in microseconds with one decimal, for tables.
func Us(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 1, 64)
}

// CPUTime returns the process's user plus system CPU time so far
// (getrusage(RUSAGE_SELF)).
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ServerCPU returns the user plus system CPU time so far of every process
// of this machine whose name (/proc/<pid>/comm's, as in /proc/<pid>/stat)
// is one of names, and how many there are: a local store server's CPU,
// its worker processes included (PostgreSQL runs one per connection). A
// process that exits takes its CPU out of the sum, so a measurement is
// taken while the clients hold their connections. Times are in the
// kernel's clock ticks, taken as 100 per second (USER_HZ on Linux). It
// returns 0, 0 where /proc cannot be read.
func ServerCPU(names ...string) (time.Duration, int) {
	dirs, err := os.ReadDir("/proc")
	if err != nil || len(names) == 0 {
		return 0, 0
	}
	var ticks int64
	n := 0
	for _, d := range dirs {
		if d.Name()[0] < '0' || d.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || end < open || !slices.Contains(names, string(b[open+1:end])) {
			continue
		}
		// After the name: state (field 3) ... utime (14), stime (15).
		f := strings.Fields(string(b[end+1:]))
		if len(f) < 13 {
			continue
		}
		u, err1 := strconv.ParseInt(f[11], 10, 64)
		st, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		ticks += u + st
		n++
	}
	return time.Duration(ticks) * (time.Second / 100), n
}

// RSS returns the process's resident set size in bytes, read from
// /proc/self/status (VmRSS); 0 where that file does not exist.
func RSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}

// MiB formats a byte count in MiB with one decimal.
func MiB(n int64) string { return fmt.Sprintf("%.1f", float64(n)/(1<<20)) }

// Table is a Markdown table being built.
type Table struct {
	Head []string
	Rows [][]string
}

// Add appends a row; cells are formatted with fmt.Sprint.
func (t *Table) Add(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = fmt.Sprint(c)
	}
	t.Rows = append(t.Rows, row)
}

// String renders the table as GitHub Markdown.
func (t *Table) String() string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(t.Head, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat("---|", len(t.Head)) + "\n")
	for _, r := range t.Rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}
