package sqlbackend

import "fmt"

// rowReader reads the columns of one row in order and keeps the first
// conversion error, as bufio.Scanner keeps its Err: a caller reads every
// column it needs, then checks Err once.
//
//	rd := reader(row)
//	slot, tok := rd.int64(), rd.string()
//	if err := rd.Err(); err != nil { … }
type rowReader struct {
	row []any
	col int // the next column
	err error
}

func reader(row []any) *rowReader { return &rowReader{row: row} }

// next returns the next column's value, or nil after an error or past the
// row's end (an error too).
func (r *rowReader) next() any {
	if r.err != nil {
		return nil
	}
	if r.col >= len(r.row) {
		r.err = fmt.Errorf("sqlbackend: row has %d columns, want more", len(r.row))
		return nil
	}
	v := r.row[r.col]
	r.col++
	return v
}

// fail records err for the column just read, unless an error came first.
func (r *rowReader) fail(err error) {
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("column %d: %w", r.col, err)
	}
}

// int64 reads an integer column; NULL is an error.
func (r *rowReader) int64() int64 {
	v := r.next()
	if r.err != nil {
		return 0
	}
	n, err := asInt64(v)
	r.fail(err)
	return n
}

// nullInt64 reads an integer column that may be NULL: ok is false for
// NULL.
func (r *rowReader) nullInt64() (n int64, ok bool) {
	v := r.next()
	if r.err != nil || v == nil {
		return 0, false
	}
	n, err := asInt64(v)
	r.fail(err)
	return n, err == nil
}

// string reads a text column; NULL reads as "".
func (r *rowReader) string() string {
	v := r.next()
	if r.err != nil {
		return ""
	}
	s, err := asString(v)
	r.fail(err)
	return s
}

// bool reads a boolean column, or an integer one as n != 0.
func (r *rowReader) bool() bool {
	v := r.next()
	if r.err != nil {
		return false
	}
	if b, ok := v.(bool); ok {
		return b
	}
	n, err := asInt64(v)
	r.fail(err)
	return n != 0
}

// Err returns the first error of the reads so far, nil if there was none.
func (r *rowReader) Err() error { return r.err }
