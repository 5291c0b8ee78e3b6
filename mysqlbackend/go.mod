module github.com/anarchon/anarchon/mysqlbackend

go 1.26.0

require (
	github.com/anarchon/anarchon v0.1.0
	github.com/go-sql-driver/mysql v1.10.1
)

require filippo.io/edwards25519 v1.2.0 // indirect
