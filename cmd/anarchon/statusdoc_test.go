package main

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/anarchon/anarchon"
)

// The README's paragraph on "status --json" names every field of a
// replica and of its job_set_diff.
func TestStatusJSONFieldsDocumented(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var para string
	for _, p := range strings.Split(string(data), "\n\n") {
		if p = strings.Join(strings.Fields(p), " "); strings.Contains(p, "`status --json`, `replicas` lists each replica") {
			para = p
		}
	}
	if para == "" {
		t.Fatal("no paragraph on status --json's replicas in README.md")
	}
	_, diffPart, _ := strings.Cut(para, "`job_set_diff`")
	for _, c := range []struct {
		what string
		typ  reflect.Type
		text string
	}{
		{"a replica", reflect.TypeFor[replicaJSON](), para},
		{"job_set_diff", reflect.TypeFor[jobDiffJSON](), diffPart},
	} {
		for f := range c.typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !strings.Contains(c.text, "`"+name+"`") {
				t.Errorf("README: the field %q of %s is not documented in:\n%s", name, c.what, para)
			}
		}
	}
}

// job_set_diff's lists are JSON arrays, never null, "jobs" included: an
// unlisted difference names no job in each of them.
func TestJobSetDiffListsNotNull(t *testing.T) {
	var recs []anarchon.InstanceRecord
	for _, id := range []string{"a", "b", "c"} {
		r := anarchon.InstanceRecord{State: anarchon.InstanceLive}
		r.ID, r.JobsFingerprint = id, "0000000000000001"
		recs = append(recs, r)
	}
	recs[2].JobsFingerprint = "0000000000000002"
	rep := replicasOf(recs)
	d := rep.Replicas[2].JobSetDiff
	if d == nil || !d.Unlisted {
		t.Fatalf("replica c: diff %+v, want an unlisted one", d)
	}
	out, err := json.Marshal(d)
	if err != nil || strings.Contains(string(out), "null") {
		t.Errorf("job_set_diff %s (%v): want [] for every list", out, err)
	}
}
