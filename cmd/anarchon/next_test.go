package main

import (
	"strings"
	"testing"
)

// next reports an expression with the wrong number of fields by what it
// takes, with no position past the expression's end; a term at fault
// keeps the engine's position (a byte offset) and field. The message ends
// in the code.
func TestNextErrors(t *testing.T) {
	const want = `want 5 (minute hour day-of-month month day-of-week), 6 (a second first) or a descriptor such as @daily or "@every 10s"`
	for _, tc := range []struct{ expr, msg string }{
		{"bad expr", `schedule: cron: "bad expr": 2 fields: ` + want + ` (bad_cron)`},
		{"5", `schedule: cron: "5": 1 field: ` + want + ` (bad_cron)`},
		{"* * *", `schedule: cron: "* * *": 3 fields: ` + want + ` (bad_cron)`},
		{"0 0 * * * * *", `schedule: cron: "0 0 * * * * *" at 12: 7 fields: ` + want + ` (bad_cron)`},
		{"@every", `schedule: cron: "@every" (descriptor): @every needs a duration (bad_cron)`},
		{"", `schedule: cron: "": empty expression (bad_cron)`},
		{"0 25 * * *", `schedule: cron: "0 25 * * *" at 2 (hour): value 25 out of range 0-23 (bad_cron)`},
		{"@every 1x", `schedule: cron: "@every 1x" at 7 (descriptor): invalid duration "1x" (bad_cron)`},
	} {
		code, out, errOut := cli(t, "next", tc.expr)
		if code != 1 || out != "" || errOut != "anarchon: "+tc.msg+"\n" {
			t.Errorf("next %q: exit %d, stdout %q, stderr\n %q\nwant\n %q", tc.expr, code, out, errOut, "anarchon: "+tc.msg+"\n")
		}
	}
	// --zone's value is a flag's, as --after's: a usage error
	if code, _, errOut := cli(t, "next", "@hourly", "--zone", "Nowhere/Land"); code != 2 || errOut != `anarchon: --zone: unknown time zone "Nowhere/Land" (bad_flag)`+"\n" {
		t.Errorf("bad zone: exit %d, %q", code, errOut)
	}
	// A YAML schedule is read as next reads it, and reported alike.
	yml := writeFile(t, t.TempDir(), "jobs.yaml", "- name: y\n  schedule: bad expr\n  shell: echo y\n")
	if code, out, _ := cli(t, "validate", "--config", yml); code != 1 || !strings.Contains(out, `jobs.yaml:2: job "y": schedule: cron: "bad expr": 2 fields: `+want+" (bad_cron)\n") {
		t.Errorf("YAML: exit %d:\n%s", code, out)
	}
}
