package mysqlbackend

import (
	"errors"
	"fmt"
	"strings"

	"github.com/anarchon/anarchon/sqlbackend"
	"github.com/go-sql-driver/mysql"
)

// Dialect is the MySQL and MariaDB dialect of the SQL base (SPEC §7).
//
// The claims of one job are serialised by a lock on the job's row
// (SELECT … FOR UPDATE); a missing row is created by an insert whose
// unique key makes concurrent creators wait for each other, so Serialize
// is empty. Key columns are VARBINARY (byte-exact, and within InnoDB's
// 3,072-byte index limit: 1,024 bytes for job and instance names, 512 for
// tokens); other text is LONGBLOB, which holds any bytes and length.
var Dialect = sqlbackend.SQLDialect{
	BigInt: "BIGINT",
	// SYSDATE(3) reads the clock when evaluated, as the base needs;
	// NOW(3) is fixed at the start of the statement, before a lock wait.
	NowMs:      "CAST(UNIX_TIMESTAMP(SYSDATE(3)) * 1000 AS SIGNED)",
	ForUpdate:  " FOR UPDATE",
	KeyText:    func(n int) string { return fmt.Sprintf("VARBINARY(%d)", n) },
	Text:       "LONGBLOB",
	TextCast:   "BINARY",
	BigIntCast: "SIGNED",
	Quote:      func(id string) string { return "`" + id + "`" },
	InsertIgnore: func(key string) string {
		k, _, _ := strings.Cut(key, ",")
		return "ON DUPLICATE KEY UPDATE " + k + " = " + k
	},
	Upsert:      func(string) string { return "ON DUPLICATE KEY UPDATE" },
	Excluded:    func(col string) string { return "VALUES(" + col + ")" },
	NoReturning: true,
	// MySQL 8 has no CREATE INDEX IF NOT EXISTS.
	InlineIndexes:    true,
	IsAlreadyCreated: IsAlreadyCreated,
	IsPermanent:      IsPermanent,
	HasColumn: func(schema, table, column string) (string, []any) {
		if schema == "" {
			return "SELECT 1 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?",
				[]any{table, column}
		}
		return "SELECT 1 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?",
			[]any{schema, table, column}
	},
}

// IsAlreadyCreated reports whether err says a table, index or column
// being created already exists (1050 ER_TABLE_EXISTS_ERROR, 1061
// ER_DUP_KEYNAME, 1060 ER_DUP_FIELDNAME): two instances migrated at once.
func IsAlreadyCreated(err error) bool {
	n := errNumber(err)
	return n == 1050 || n == 1061 || n == 1060
}

// IsPermanent reports whether err is a server error a retry cannot fix: a
// syntax error or missing object (1046, 1049, 1054, 1064, 1146), refused
// data (1048 a NULL, 1062 a duplicate, 1264 out of range, 1366 bad text,
// 1406 too long), or refused credentials and rights (1044, 1045, 1142,
// 1143). Deadlocks (1213), lock wait timeouts (1205), a read-only or gone
// server and dropped connections stay transient.
func IsPermanent(err error) bool {
	switch errNumber(err) {
	case 1044, 1045, 1046, 1048, 1049, 1054, 1062, 1064, 1142, 1143, 1146, 1264, 1366, 1406:
		return true
	}
	return false
}

func errNumber(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}
