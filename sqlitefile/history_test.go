package sqlitefile_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anarchon/anarchon/sqlitefile"
)

func TestOpenBadPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, want string }{
		{"directory", dir, "is a directory"},
		{"missing parent", filepath.Join(dir, "no", "such", "a.db"), "does not exist"},
		{"parent is a file", filepath.Join(file, "a.db"), "is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := sqlitefile.Open(tc.path, nil)
			if err == nil {
				b.Close(context.Background())
				t.Fatalf("Open(%q) succeeded", tc.path)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "out of memory") {
				t.Errorf("Open(%q): %v, want an error saying %q", tc.path, err, tc.want)
			}
		})
	}
}
