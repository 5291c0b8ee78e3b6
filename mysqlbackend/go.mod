module github.com/anarchon/anarchon/mysqlbackend

go 1.25

require (
	github.com/anarchon/anarchon v0.0.0-00010101000000-000000000000
	github.com/go-sql-driver/mysql v1.10.1
)

require filippo.io/edwards25519 v1.2.0 // indirect

replace github.com/anarchon/anarchon => ../
