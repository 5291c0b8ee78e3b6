package sqlitebackend

import "time"

// SetFileCheckEvery sets how often a claim looks at the database file
// (Options.File), for tests that replace the file and must see it at the
// next claim; it returns a function that puts the old value back. It is
// not safe to call while claims run.
func SetFileCheckEvery(d time.Duration) (restore func()) {
	old := fileCheckEvery
	fileCheckEvery = d
	return func() { fileCheckEvery = old }
}
