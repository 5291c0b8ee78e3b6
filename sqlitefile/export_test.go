package sqlitefile

import (
	"net/url"
	"os"

	"github.com/anarchon/anarchon/sqlitebackend"
)

// OpenManualCheckpoints is Open without the backend's own checkpoints
// (Options.Checkpoints) and with SQLite's automatic one off: the WAL is
// checkpointed only when the caller asks, so a test that counts the WAL's
// frames between its own checkpoints sees every frame written. With the
// backend's checkpointer, one that came while the writers paused for 100
// ms restarted the WAL within a count (a count of -20,038 frames).
func OpenManualCheckpoints(path string) (*sqlitebackend.Backend, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	f.Close()
	return open(path, nil, func(path string, busyMs int64) string {
		return DSN(path, busyMs) + "&_pragma=" + url.QueryEscape("wal_autocheckpoint(0)")
	}, false)
}
