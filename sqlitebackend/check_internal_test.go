package sqlitebackend

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlbackend"
)

// library answers checkOnce's statements as a SQLite library of version
// v does, with or without the JSON functions.
type library struct {
	v    string
	json bool
	err  error // jsonProbe's error with json false; nil: SQLite's for a missing table
}

func (l library) All(_ context.Context, q string, _ ...any) ([][]any, error) {
	switch {
	case q == "SELECT sqlite_version()":
		return [][]any{{l.v}}, nil
	case q == jsonProbe && !l.json && l.err != nil:
		return nil, l.err
	case q == jsonProbe && !l.json:
		return nil, errors.New("SQL logic error: no such table: json_each (1)")
	case q == jsonProbe:
		return [][]any{{int64(1)}}, nil
	}
	return nil, errors.New("unexpected statement " + q)
}

func (l library) Transaction(context.Context, func(sqlbackend.Querier) error) error {
	return errors.New("no transaction expected")
}

// TestCheckNeedsJSON: Init refuses, permanently and saying why, a library
// without the JSON functions the batches use, accepts one with them, and
// leaves any other error of its probe as it is (retried).
func TestCheckNeedsJSON(t *testing.T) {
	ctx := t.Context()
	if err := checkOnce(ctx, library{v: "3.37.2", json: true}, false); err != nil {
		t.Errorf("3.37.2 with JSON1: %v", err)
	}
	err := checkOnce(ctx, library{v: "3.37.2"}, false)
	if err == nil || !anarchon.IsPermanent(err) || !strings.Contains(err.Error(), "json_each") {
		t.Errorf("3.37.2 without JSON1: %v, want a permanent error naming json_each", err)
	}
	// Any other failure of the probe is not the library's: returned as
	// it is, for the caller to retry.
	io := errors.New("disk I/O error (10)")
	if err := checkOnce(ctx, library{v: "3.37.2", err: io}, false); err != io {
		t.Errorf("3.37.2, an I/O error: %v, want it unchanged", err)
	}
	if err := checkOnce(ctx, library{v: "3.34.1", json: true}, false); err == nil || !strings.Contains(err.Error(), "RETURNING") {
		t.Errorf("3.34.1: %v, want the RETURNING error", err)
	}
}
