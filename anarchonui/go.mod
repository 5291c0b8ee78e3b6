module github.com/anarchon/anarchon/anarchonui

go 1.25

toolchain go1.26.11

require github.com/anarchon/anarchon v0.1.0
