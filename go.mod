module github.com/anarchon/anarchon

go 1.25
