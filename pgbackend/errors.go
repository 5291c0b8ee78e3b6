package pgbackend

import "errors"

// permanentClasses are the SQLSTATE classes (the code's first two
// characters) of errors that repeating the statement gives again.
var permanentClasses = map[string]bool{
	"0A": true, // feature not supported
	"22": true, // data exception: a value the column or function refuses
	"23": true, // integrity constraint violation (anarchon's claims use ON CONFLICT: a violation that reaches the caller is not a lost race)
	"28": true, // invalid authorization: wrong password, no such role
	"2F": true, // SQL routine exception
	"3D": true, // invalid catalog name: no such database
	"3F": true, // invalid schema name
	"42": true, // syntax error or access rule violation: undefined table or function, no privilege
	"44": true, // WITH CHECK OPTION violation
	"54": true, // program limit exceeded
	"P0": true, // PL/pgSQL error
}

// IsPermanent reports whether err carries an SQLSTATE (through a
// SQLState() string method, as pgconn.PgError has) whose class says that
// repeating the statement fails again: 42 (undefined table, syntax, no
// privilege), 22 (data exception), 23 (constraint violation), 28
// (authorization), 3D and 3F (no such database or schema), 0A, 2F, 44, 54
// and P0. Every other error is transient: 08 (connection), 40001 and
// 40P01 (serialization failure, deadlock), 53 (insufficient resources),
// 57 (operator intervention: 57P01–57P03 shutdown, 57014 cancelled), 55
// (a lock not available), XX, and errors without an SQLSTATE (the
// network, a context). It is the dialect's IsPermanent: the base marks
// the errors it matches with anarchon.Permanent.
func IsPermanent(err error) bool {
	var s sqlStater
	if !errors.As(err, &s) {
		return false
	}
	code := s.SQLState()
	return len(code) == 5 && permanentClasses[code[:2]]
}
