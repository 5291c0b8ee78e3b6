package sqlitebackend

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// codeErr is an error with an SQLite result code, as the driver's are.
type codeErr int

func (c codeErr) Error() string { return "sqlite error" }
func (c codeErr) Code() int     { return int(c) }

// withAccessReason leaves alone every error it does not explain: one
// without SQLite's code, another code than CANTOPEN or READONLY, an
// unknown path, and a file this process may use (the failure has another
// cause). The permission cases are TestSQLiteStoreAccessDenied's, in
// cmd/anarchon, which runs the daemon as another user than root.
func TestWithAccessReasonLeavesOthers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{nil, errors.New("no code"), codeErr(5), codeErr(11)} {
		if got := withAccessReason(err, path); got != err {
			t.Errorf("withAccessReason(%v) = %v, want it unchanged", err, got)
		}
	}
	for _, err := range []error{codeErr(14), codeErr(1544)} {
		if got := withAccessReason(err, ""); got != err {
			t.Errorf("withAccessReason(%v, \"\") = %v, want it unchanged", err, got)
		}
		if got := withAccessReason(err, path); got != err {
			t.Errorf("withAccessReason(%v) of a usable file = %v, want it unchanged", err, got)
		}
	}
	// The directory's probe leaves nothing behind.
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the directory holds %d files after the checks, want the database alone", len(ents))
	}
}
