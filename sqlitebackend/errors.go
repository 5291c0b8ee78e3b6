package sqlitebackend

import "errors"

// sqliteCoder is the interface of modernc.org/sqlite's *Error: an error
// that carries SQLite's result code (extended codes included).
type sqliteCoder interface{ Code() int }

// permanentCodes are SQLite's primary result codes of errors that
// repeating the statement gives again.
var permanentCodes = map[int]bool{
	1:  true, // SQLITE_ERROR: syntax error, no such table or column
	3:  true, // SQLITE_PERM: access permission denied
	8:  true, // SQLITE_READONLY: the file or connection is read-only
	11: true, // SQLITE_CORRUPT: the file is malformed
	14: true, // SQLITE_CANTOPEN: the file cannot be opened
	18: true, // SQLITE_TOOBIG: a string or blob over the limit
	19: true, // SQLITE_CONSTRAINT: a constraint refused the data
	20: true, // SQLITE_MISMATCH: a value of the wrong type
	21: true, // SQLITE_MISUSE: the library used wrongly
	23: true, // SQLITE_AUTH: not authorised
	25: true, // SQLITE_RANGE: a bind index out of range
	26: true, // SQLITE_NOTADB: the file is not a database
}

// IsPermanent reports whether err carries an SQLite result code (through a
// Code() int method, as modernc.org/sqlite's errors have) that repeating
// the statement gives again: SQLITE_ERROR (syntax, no such table),
// SQLITE_CONSTRAINT, SQLITE_MISMATCH, SQLITE_READONLY, SQLITE_CORRUPT,
// SQLITE_NOTADB, SQLITE_CANTOPEN and the like. SQLITE_BUSY and
// SQLITE_LOCKED (another writer), SQLITE_IOERR, SQLITE_FULL,
// SQLITE_NOMEM, SQLITE_INTERRUPT, SQLITE_SCHEMA and errors without a code
// are transient. It is the dialect's IsPermanent: the base marks the
// errors it matches with anarchon.Permanent. Errors of drivers without
// such a method are all transient.
func IsPermanent(err error) bool {
	var c sqliteCoder
	if !errors.As(err, &c) {
		return false
	}
	return permanentCodes[c.Code()&0xff]
}
