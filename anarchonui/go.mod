module github.com/anarchon/anarchon/anarchonui

go 1.25

require github.com/anarchon/anarchon v0.0.0-00010101000000-000000000000

replace github.com/anarchon/anarchon => ../
