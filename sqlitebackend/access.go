package sqlitebackend

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// withAccessReason adds to err, an error of a statement on the database
// file at path, the file system's reason when SQLite could not open or
// write that file, or a file it keeps beside it, for lack of permission.
// SQLite says only "unable to open database file" (SQLITE_CANTOPEN) or
// "attempt to write a readonly database" (SQLITE_READONLY), naming
// neither the file nor the cause. The reason comes first, err (its code
// kept for errors.As and IsPermanent) after it. err is returned as it is
// for any other error, or when path is unknown ("") or no permission
// problem is found.
func withAccessReason(err error, path string) error {
	var c sqliteCoder
	if err == nil || path == "" || !errors.As(err, &c) {
		return err
	}
	if code := c.Code() & 0xff; code != 14 && code != 8 { // SQLITE_CANTOPEN, SQLITE_READONLY
		return err
	}
	reason := AccessReason(path)
	if reason == nil {
		return err
	}
	return fmt.Errorf("%w; SQLite: %w", reason, err)
}

// AccessReason returns the permission error that keeps this process from
// using the database file at path, the first of: the file cannot be read;
// a file SQLite keeps beside it (-wal, -shm) exists and cannot be written
// (unless the file cannot be written either: SQLite made it with the
// file's mode), or does not and cannot be created in the directory; the
// file can be read but not written (said so). Errors wrap
// fs.ErrPermission. The
// writers' lock file (LockFileSuffix) is not looked at: one that cannot
// be opened only leaves the writers to SQLite's busy handler (the package
// doc, "Writers across processes") and fails nothing. Call it after
// SQLite failed (Init adds it to its errors; a caller adds it to an error
// of a later statement, SQLite's "attempt to write a readonly database"
// at a first write): it may create (and remove) a file in the directory
// to learn whether it can. nil when nothing is denied: the failure has
// another cause.
func AccessReason(path string) error {
	// Reading first: without it nothing works, while a read-only file
	// still serves a reader, so its lack of write access is said last.
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return err
		}
		return nil // gone, or another failure than the one this explains
	}
	f.Close()
	// SQLite gives the -wal and -shm files it makes the database file's
	// mode: beside a file that cannot be written, one of them that cannot
	// be written either is most likely that copy (a 0444 file's), and the
	// file's own mode is what to mend.
	var fileErr error // the file's own refusal to be written, said last
	if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
		f.Close()
	} else if errors.Is(err, fs.ErrPermission) {
		// The bare "permission denied" reads as if the file were closed
		// to this process, while it was just read.
		fileErr = fmt.Errorf("%w: the file can be read but not written", err)
	}
	dir, dirChecked := filepath.Dir(path), false
	for _, suffix := range []string{"-wal", "-shm"} {
		f, err := os.OpenFile(path+suffix, os.O_RDWR, 0)
		switch {
		case err == nil:
			f.Close()
		case errors.Is(err, fs.ErrPermission):
			if fileErr == nil {
				return err
			}
		case errors.Is(err, fs.ErrNotExist) && !dirChecked:
			dirChecked = true
			probe, err := os.CreateTemp(dir, ".anarchon-access-*")
			if err != nil {
				var pe *fs.PathError
				if errors.Is(err, fs.ErrPermission) && errors.As(err, &pe) {
					return fmt.Errorf("cannot create %s: directory %s: %w", path+suffix, dir, pe.Err)
				}
				return fileErr
			}
			probe.Close()
			_ = os.Remove(probe.Name())
		}
	}
	return fileErr
}
