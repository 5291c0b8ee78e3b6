package cron

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrNeverFires is matched (through [errors.Is]) by the error that [Parse]
// returns for an expression that is well formed but can never fire, such as
// "0 0 30 2 *".
var ErrNeverFires = errors.New("cron: expression never fires")

// ParseError describes why an expression was rejected by [Parse].
type ParseError struct {
	// Expr is the whole input.
	Expr string
	// Pos is the 0-based byte offset in Expr of the offending term.
	Pos int
	// Field names the field at fault: "second", "minute", "hour",
	// "day-of-month", "month", "day-of-week", "descriptor", or "" when the
	// error concerns the expression as a whole.
	Field string
	// Msg is the lower-case reason.
	Msg string

	err error
}

// Error formats the error as
//
//	cron: "<expr>" at <pos> (<field>): <msg>
//
// omitting the parenthesised field name when Field is empty.
func (e *ParseError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("cron: %q at %d: %s", e.Expr, e.Pos, e.Msg)
	}
	return fmt.Sprintf("cron: %q at %d (%s): %s", e.Expr, e.Pos, e.Field, e.Msg)
}

// Unwrap returns [ErrNeverFires] for an expression that can never fire and
// nil otherwise.
func (e *ParseError) Unwrap() error { return e.err }

// Expr is a parsed cron expression. It is immutable and safe for concurrent
// use.
type Expr struct {
	src     string
	every   time.Duration
	seconds bool
	fixed   bool

	sec   uint64 // bits 0-59
	min   uint64 // bits 0-59
	hour  uint32 // bits 0-23
	dom   uint32 // bits 1-31
	month uint16 // bits 1-12
	dow   uint8  // bits 0-6

	domStar bool // day-of-month begins with * or is ?
	dowStar bool // day-of-week begins with * or is ?

	lastDays    uint32   // bit n: L-n
	wDays       uint32   // bit n: nW
	lastWeekday bool     // LW
	lastDow     uint8    // bit d: dL
	nthDow      [7]uint8 // bit k of nthDow[d]: d#k

	// masks[dim-28][wd] is the set of matching days (bits 1-31) of a month
	// of dim days whose first day is weekday wd.
	masks [4][7]uint32
}

// Every returns the interval of an "@every <duration>" expression and 0 for
// any other expression.
func (e *Expr) Every() time.Duration { return e.every }

// HasSeconds reports whether the expression has a leading seconds field.
func (e *Expr) HasSeconds() bool { return e.seconds }

// String returns the expression as parsed, with its fields separated by
// single spaces and descriptors in lower case.
func (e *Expr) String() string { return e.src }

type fieldSpec struct {
	name     string
	min, max int
	wrapMax  int // largest value in the wrapping cycle (6 for day-of-week)
	names    map[string]int
}

var (
	monthNames = map[string]int{
		"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
		"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12,
	}
	dowNames = map[string]int{
		"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6,
	}

	secondSpec = fieldSpec{name: "second", min: 0, max: 59, wrapMax: 59}
	minuteSpec = fieldSpec{name: "minute", min: 0, max: 59, wrapMax: 59}
	hourSpec   = fieldSpec{name: "hour", min: 0, max: 23, wrapMax: 23}
	domSpec    = fieldSpec{name: "day-of-month", min: 1, max: 31, wrapMax: 31}
	monthSpec  = fieldSpec{name: "month", min: 1, max: 12, wrapMax: 12, names: monthNames}
	dowSpec    = fieldSpec{name: "day-of-week", min: 0, max: 7, wrapMax: 6, names: dowNames}
)

var descriptors = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

type token struct {
	s   string
	pos int
}

func splitFields(s string) []token {
	var toks []token
	i := 0
	for i < len(s) {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			break
		}
		j := i
		for j < len(s) && s[j] != ' ' && s[j] != '\t' {
			j++
		}
		toks = append(toks, token{s[i:j], i})
		i = j
	}
	return toks
}

type parser struct {
	expr string
}

func (p *parser) errf(pos int, field, format string, args ...any) *ParseError {
	return &ParseError{Expr: p.expr, Pos: pos, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Parse parses a cron expression in anarchon's dialect (see the package
// documentation). Every error it returns is a *ParseError; an expression
// that can never fire yields one that matches [ErrNeverFires].
func Parse(expr string) (*Expr, error) {
	p := &parser{expr: expr}
	toks := splitFields(expr)
	if len(toks) == 0 {
		return nil, p.errf(0, "", "empty expression")
	}
	if strings.HasPrefix(toks[0].s, "@") {
		return p.parseDescriptor(toks)
	}
	var specs []fieldSpec
	switch len(toks) {
	case 5:
		specs = []fieldSpec{minuteSpec, hourSpec, domSpec, monthSpec, dowSpec}
	case 6:
		specs = []fieldSpec{secondSpec, minuteSpec, hourSpec, domSpec, monthSpec, dowSpec}
	default:
		pos := len(expr)
		if len(toks) > 6 {
			pos = toks[6].pos
		}
		return nil, p.errf(pos, "", "expected 5 or 6 fields, got %d", len(toks))
	}
	e := &Expr{seconds: len(toks) == 6}
	if !e.seconds {
		e.sec = 1
		toks = append([]token{{}}, toks...)
		specs = append([]fieldSpec{secondSpec}, specs...)
	}
	for i, t := range toks {
		if i == 0 && !e.seconds {
			continue
		}
		if err := p.parseField(e, i, specs[i], t); err != nil {
			return nil, err
		}
	}
	e.fixed = toks[1].s[0] != '*' && toks[2].s[0] != '*'
	var parts []string
	for i, t := range toks {
		if i == 0 && !e.seconds {
			continue
		}
		parts = append(parts, t.s)
	}
	e.src = strings.Join(parts, " ")
	e.fillMasks()
	if !e.canFire() {
		return nil, &ParseError{Expr: expr, Pos: toks[3].pos,
			Msg: "expression can never fire: none of the months it names has a day its day fields name (such as 30 February)", err: ErrNeverFires}
	}
	return e, nil
}

func (p *parser) parseDescriptor(toks []token) (*Expr, error) {
	name := strings.ToLower(toks[0].s)
	if name == "@every" {
		if len(toks) < 2 {
			return nil, p.errf(len(p.expr), "descriptor", "@every needs a duration")
		}
		if len(toks) > 2 {
			return nil, p.errf(toks[2].pos, "descriptor", "unexpected %q after the duration", toks[2].s)
		}
		d, err := time.ParseDuration(toks[1].s)
		if err != nil {
			return nil, p.errf(toks[1].pos, "descriptor", "invalid duration %q", toks[1].s)
		}
		if d < time.Second {
			return nil, p.errf(toks[1].pos, "descriptor", "duration %s is shorter than 1s", d)
		}
		return &Expr{src: "@every " + d.String(), every: d}, nil
	}
	std, ok := descriptors[name]
	if !ok {
		return nil, p.errf(toks[0].pos, "descriptor", "unknown descriptor %q", toks[0].s)
	}
	if len(toks) > 1 {
		return nil, p.errf(toks[1].pos, "descriptor", "unexpected %q after %s", toks[1].s, name)
	}
	e, err := Parse(std)
	if err != nil {
		panic("cron: bad built-in descriptor " + name)
	}
	e.src = name
	return e, nil
}

func (p *parser) parseField(e *Expr, idx int, spec fieldSpec, t token) error {
	s := t.s
	if s == "?" {
		if idx == 3 || idx == 5 {
			if idx == 3 {
				e.dom, e.domStar = bitsRange(1, 31), true
			} else {
				e.dow, e.dowStar = 0x7f, true
			}
			return nil
		}
		return p.errf(t.pos, spec.name, "? is only allowed in day-of-month and day-of-week")
	}
	if s[0] == '*' {
		if idx == 3 {
			e.domStar = true
		} else if idx == 5 {
			e.dowStar = true
		}
	}
	var bits uint64
	start := 0
	for {
		end := strings.IndexByte(s[start:], ',')
		if end < 0 {
			end = len(s)
		} else {
			end += start
		}
		term := s[start:end]
		pos := t.pos + start
		if term == "" {
			return p.errf(pos, spec.name, "empty list element")
		}
		b, err := p.parseTerm(e, idx, spec, term, pos)
		if err != nil {
			return err
		}
		bits |= b
		if end == len(s) {
			break
		}
		start = end + 1
	}
	switch idx {
	case 0:
		e.sec = bits
	case 1:
		e.min = bits
	case 2:
		e.hour = uint32(bits)
	case 3:
		e.dom = uint32(bits)
	case 4:
		e.month = uint16(bits)
	case 5:
		e.dow = uint8(bits&0x7f | bits>>7&1) // 7 is Sunday
	}
	return nil
}

func bitsRange(lo, hi int) uint32 {
	var b uint32
	for v := lo; v <= hi; v++ {
		b |= 1 << uint(v)
	}
	return b
}

// value reads a number or (where the field has names) a name at the start of
// s. It returns the value and the number of bytes consumed.
func (p *parser) value(spec fieldSpec, s string, pos int) (int, int, error) {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n > 0 {
		if n > 6 {
			return 0, 0, p.errf(pos, spec.name, "value %s out of range %d-%d", s[:n], spec.min, spec.max)
		}
		v, _ := strconv.Atoi(s[:n])
		if v < spec.min || v > spec.max {
			return 0, 0, p.errf(pos, spec.name, "value %d out of range %d-%d", v, spec.min, spec.max)
		}
		return v, n, nil
	}
	for n < len(s) && isLetter(s[n]) {
		n++
	}
	if n == 0 {
		if len(s) == 0 {
			return 0, 0, p.errf(pos, spec.name, "missing value")
		}
		return 0, 0, p.errf(pos, spec.name, "unexpected character %s", charAt(s, 0))
	}
	if spec.names == nil {
		return 0, 0, p.errf(pos, spec.name, "unexpected name %q", s[:n])
	}
	v, ok := spec.names[strings.ToUpper(s[:n])]
	if !ok {
		return 0, 0, p.errf(pos, spec.name, "unknown name %q", s[:n])
	}
	return v, n, nil
}

// charAt quotes the character that starts at byte offset i of s: the whole
// UTF-8 sequence when there is one (so "М" is reported as 'М', not as its
// first byte read as a rune), or the single byte escaped when s is not valid
// UTF-8 there.
func charAt(s string, i int) string {
	r, size := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && size <= 1 {
		return strconv.Quote(s[i : i+1])
	}
	return strconv.QuoteRune(r)
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// number reads a plain decimal number making up all of s.
func (p *parser) number(field, what, s string, pos, lo, hi int) (int, error) {
	if s == "" {
		return 0, p.errf(pos, field, "missing %s", what)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, p.errf(pos+i, field, "unexpected character %s in %s", charAt(s, i), what)
		}
	}
	if len(s) > 6 {
		return 0, p.errf(pos, field, "%s %s out of range %d-%d", what, s, lo, hi)
	}
	v, _ := strconv.Atoi(s)
	if v < lo || v > hi {
		return 0, p.errf(pos, field, "%s %d out of range %d-%d", what, v, lo, hi)
	}
	return v, nil
}

func (p *parser) parseTerm(e *Expr, idx int, spec fieldSpec, term string, pos int) (uint64, error) {
	up := strings.ToUpper(term)
	switch idx {
	case 3: // day-of-month specials
		switch {
		case up == "L":
			e.lastDays |= 1
			return 0, nil
		case up == "LW":
			e.lastWeekday = true
			return 0, nil
		case strings.HasPrefix(up, "L-"):
			n, err := p.number(spec.name, "offset", term[2:], pos+2, 0, 30)
			if err != nil {
				return 0, err
			}
			e.lastDays |= 1 << uint(n)
			return 0, nil
		case len(up) > 1 && up[len(up)-1] == 'W':
			n, err := p.number(spec.name, "day", term[:len(term)-1], pos, 1, 31)
			if err != nil {
				return 0, err
			}
			e.wDays |= 1 << uint(n)
			return 0, nil
		case up == "W":
			return 0, p.errf(pos, spec.name, "day missing before W, e.g. 15W")
		}
	case 5: // day-of-week specials
		if i := strings.IndexByte(term, '#'); i >= 0 {
			d, n, err := p.value(spec, term[:i], pos)
			if err != nil {
				return 0, err
			}
			if n != i {
				return 0, p.errf(pos+n, spec.name, "unexpected character %s", charAt(term, n))
			}
			k, err := p.number(spec.name, "occurrence", term[i+1:], pos+i+1, 1, 5)
			if err != nil {
				return 0, err
			}
			e.nthDow[d%7] |= 1 << uint(k)
			return 0, nil
		}
		if up == "L" {
			return 0, p.errf(pos, spec.name, "weekday missing before L, e.g. 5L")
		}
		if len(up) > 1 && up[len(up)-1] == 'L' {
			d, n, err := p.value(spec, term[:len(term)-1], pos)
			if err != nil {
				return 0, err
			}
			if n != len(term)-1 {
				return 0, p.errf(pos+n, spec.name, "unexpected character %s", charAt(term, n))
			}
			e.lastDow |= 1 << uint(d%7)
			return 0, nil
		}
	}

	i := 0
	var lo, hi int
	star := false
	if term[0] == '*' {
		star = true
		i = 1
		lo, hi = spec.min, spec.wrapMax
	} else {
		v, n, err := p.value(spec, term, pos)
		if err != nil {
			return 0, err
		}
		i = n
		lo, hi = v, v
		if i < len(term) && term[i] == '-' {
			v2, n2, err := p.value(spec, term[i+1:], pos+i+1)
			if err != nil {
				return 0, err
			}
			hi = v2
			i += 1 + n2
		}
	}
	step := 1
	hasStep := false
	if i < len(term) && term[i] == '/' {
		hasStep = true
		s := term[i+1:]
		sp := pos + i + 1
		j := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == 0 {
			if j < len(s) {
				return 0, p.errf(sp, spec.name, "unexpected character %s in step", charAt(s, 0))
			}
			return 0, p.errf(sp, spec.name, "missing step")
		}
		if j > 6 {
			return 0, p.errf(pos, spec.name, "step %s is larger than the range %d-%d", s[:j], spec.min, spec.max)
		}
		step, _ = strconv.Atoi(s[:j])
		if step == 0 {
			return 0, p.errf(pos, spec.name, "zero step")
		}
		if step > spec.max {
			return 0, p.errf(pos, spec.name, "step %d is larger than the range %d-%d", step, spec.min, spec.max)
		}
		i += 1 + j
		if !star && lo == hi && !strings.Contains(term[:i], "-") {
			hi = spec.wrapMax // a/n: from a to the field's maximum
			if lo > hi {
				hi = lo
			}
		}
	}
	if i < len(term) {
		return 0, p.errf(pos+i, spec.name, "unexpected character %s", charAt(term, i))
	}
	_ = hasStep
	return spanBits(spec, lo, hi, step), nil
}

// spanBits returns the bits for lo-hi/step, wrapping around the field's
// cycle when lo > hi.
func spanBits(spec fieldSpec, lo, hi, step int) uint64 {
	size := spec.wrapMax - spec.min + 1
	if spec.max > spec.wrapMax { // day-of-week: 7 is 0
		if lo == 7 {
			lo = 0
			if hi == 7 {
				hi = 0
			}
		}
		if lo > hi && hi == 7 {
			hi = 0
		}
	}
	var span int
	if lo <= hi {
		span = hi - lo
	} else {
		span = hi - lo + size
	}
	var bits uint64
	for k := 0; k <= span; k += step {
		v := lo + k
		if v > spec.wrapMax && lo <= hi {
			bits |= 1 << uint(v) // 7 in day-of-week, folded by the caller
			continue
		}
		v = spec.min + (v-spec.min)%size
		bits |= 1 << uint(v)
	}
	return bits
}
