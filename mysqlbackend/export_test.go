package mysqlbackend

// CheckVersion is checkVersion, for tests.
var CheckVersion = checkVersion
