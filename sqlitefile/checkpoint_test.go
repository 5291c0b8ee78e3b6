package sqlitefile_test

import (
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlitebackend"
	"github.com/anarchon/anarchon/sqlitefile"
)

// TestCheckpointsOffTheTurn: Open turns SQLite's automatic checkpoint off
// on its connections, and the backend checkpoints the WAL itself once its
// writers are idle (sqlitebackend.Options.Checkpoints). In WAL mode only a
// checkpoint writes the database file, so its size shows when one ran:
// 8 MiB written (far past SQLite's automatic 1,000 pages) leave the file
// as it was until CheckpointIdle after the last write, and are in it
// after. In fake time (testing/synctest), so the wait is exact.
func TestCheckpointsOffTheTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		path := filepath.Join(t.TempDir(), "ckpt.db")
		b, err := sqlitefile.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close(ctx)
		if err := b.Init(ctx); err != nil {
			t.Fatal(err)
		}
		var auto int
		if err := b.DB().QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&auto); err != nil || auto != 0 {
			t.Fatalf("PRAGMA wal_autocheckpoint = %d, %v; want 0", auto, err)
		}
		time.Sleep(sqlitebackend.CheckpointIdle * 2) // Init's writes checkpointed
		synctest.Wait()
		size := func() int64 {
			t.Helper()
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			return fi.Size()
		}
		before := size()
		// The pages go straight to the pool; a claim through the backend
		// is the write its writers' queue counts.
		if _, err := b.DB().ExecContext(ctx, "CREATE TABLE filler (b BLOB); INSERT INTO filler VALUES (zeroblob(8 << 20))"); err != nil {
			t.Fatal(err)
		}
		won, err := b.Claim(ctx, anarchon.ClaimInput{Job: "j", Slot: time.Now().Add(-time.Minute).UnixMilli(), Token: "t", InstanceID: "i"})
		if err != nil || !won {
			t.Fatalf("claim: %v, %v", won, err)
		}
		synctest.Wait()
		if got := size(); got != before {
			t.Fatalf("the database file went from %d to %d bytes before the writers were idle: checkpointed on the writers' turn", before, got)
		}
		time.Sleep(sqlitebackend.CheckpointIdle * 2)
		synctest.Wait()
		if got := size(); got < before+8<<20 {
			t.Fatalf("the database file is %d bytes %v after the last write (%d before the 8 MiB): not checkpointed", got, sqlitebackend.CheckpointIdle*2, before)
		}
	})
}
