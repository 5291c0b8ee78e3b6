module github.com/anarchon/anarchon

go 1.25

toolchain go1.27.4
