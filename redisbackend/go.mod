module github.com/anarchon/anarchon/redisbackend

go 1.26.0

toolchain go1.27.4

require (
	github.com/anarchon/anarchon v0.1.0
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
