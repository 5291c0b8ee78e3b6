module github.com/anarchon/anarchon/tools

go 1.26.0

toolchain go1.26.11

require golang.org/x/mod v0.43.0
