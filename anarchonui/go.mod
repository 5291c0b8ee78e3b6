module github.com/anarchon/anarchon/anarchonui

go 1.25

toolchain go1.27.4

require github.com/anarchon/anarchon v0.1.0
