package sqlbackendtest

import (
	"os"
	"testing"
)

// ServerEnv returns the value of the environment variable name, which
// locates a test server (a URL, a DSN). Without it the test skips with a
// message that names the variable and the script that starts a server,
// or fails under CI=true, where every server must be there.
func ServerEnv(t testing.TB, name, script string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		msg := name + " is not set: start a server with " + script + " and export its output"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return v
}
