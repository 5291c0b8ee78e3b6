module github.com/anarchon/anarchon/tools

go 1.26.0

toolchain go1.27.4

require golang.org/x/mod v0.43.0
