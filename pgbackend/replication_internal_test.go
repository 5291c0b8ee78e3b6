package pgbackend

import (
	"strings"
	"testing"
)

// TestJudge checks the verdict on each combination of settings and
// standbys; the real server's answers are checked in replication_test.go
// and, with real standbys, by the failover drill in the faults module.
func TestJudge(t *testing.T) {
	sync := Standby{Name: "s1", State: "streaming", SyncState: "sync"}
	quorum := Standby{Name: "s1", State: "streaming", SyncState: "quorum"}
	async := Standby{Name: "s2", State: "streaming", SyncState: "async"}
	hidden := Standby{}
	tests := []struct {
		name     string
		r        Replication
		topology Topology
		safe     bool
		warn     []string // each a piece of one warning, in order
	}{
		{"single on", Replication{SynchronousCommit: "on"}, TopologySingle, true, nil},
		{"single local", Replication{SynchronousCommit: "local"}, TopologySingle, true, nil},
		{"single off", Replication{SynchronousCommit: "off"}, TopologySingle, false, []string{"synchronous_commit=off: a crash"}},
		{"async standby", Replication{SynchronousCommit: "on", Standbys: []Standby{async}}, TopologyAsync, false,
			[]string{"async standby: a failover can lose acknowledged claims"}},
		{"hidden standby, no names", Replication{SynchronousCommit: "on", Standbys: []Standby{hidden}}, TopologyAsync, false,
			[]string{"async standby"}},
		{"async standby, off", Replication{SynchronousCommit: "off", Standbys: []Standby{async}}, TopologyAsync, false,
			[]string{"async standby", "synchronous_commit=off"}},
		{"sync on", Replication{SynchronousCommit: "on", SynchronousStandbyNames: "*", Standbys: []Standby{sync}}, TopologySync, true, nil},
		{"sync remote_apply", Replication{SynchronousCommit: "remote_apply", SynchronousStandbyNames: "*", Standbys: []Standby{sync}}, TopologySync, true, nil},
		{"quorum on", Replication{SynchronousCommit: "on", SynchronousStandbyNames: "ANY 1 (s1, s2)", Standbys: []Standby{quorum, async}}, TopologySync, true, nil},
		{"sync and async", Replication{SynchronousCommit: "on", SynchronousStandbyNames: "s1", Standbys: []Standby{sync, async}}, TopologySync, true, nil},
		{"sync, role cannot see", Replication{SynchronousCommit: "on", SynchronousStandbyNames: "*", Standbys: []Standby{hidden}}, TopologySync, true, nil},
		{"sync remote_write", Replication{SynchronousCommit: "remote_write", SynchronousStandbyNames: "*", Standbys: []Standby{sync}}, TopologySync, false,
			[]string{"synchronous_commit=remote_write"}},
		{"sync local", Replication{SynchronousCommit: "local", SynchronousStandbyNames: "*", Standbys: []Standby{sync}}, TopologySync, false,
			[]string{"synchronous_commit=local: commits do not wait"}},
		{"sync off", Replication{SynchronousCommit: "off", SynchronousStandbyNames: "*", Standbys: []Standby{sync}}, TopologySync, false,
			[]string{"synchronous_commit=off: commits do not wait", "synchronous_commit=off: a crash"}},
		{"names, none connected", Replication{SynchronousCommit: "on", SynchronousStandbyNames: "*"}, TopologySync, true,
			[]string{"no synchronous standby is connected"}},
		{"names, only async connected", Replication{SynchronousCommit: "on", SynchronousStandbyNames: "s9", Standbys: []Standby{async}}, TopologySync, true,
			[]string{"no synchronous standby is connected"}},
		{"unknown setting", Replication{SynchronousCommit: "maybe", SynchronousStandbyNames: "*", Standbys: []Standby{sync}}, TopologySync, false,
			[]string{`synchronous_commit="maybe"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.r
			judge(&r)
			if r.Topology != tt.topology || r.Safe != tt.safe {
				t.Errorf("topology %q safe %v, want %q %v", r.Topology, r.Safe, tt.topology, tt.safe)
			}
			if len(r.Warnings) != len(tt.warn) {
				t.Fatalf("warnings %q, want %d", r.Warnings, len(tt.warn))
			}
			for i, w := range tt.warn {
				if !strings.Contains(r.Warnings[i], w) {
					t.Errorf("warning %d %q does not say %q", i, r.Warnings[i], w)
				}
			}
			if s := r.String(); !strings.HasPrefix(s, string(tt.topology)) || strings.HasSuffix(s, ", unsafe") == tt.safe {
				t.Errorf("String() = %q", s)
			}
		})
	}
	if s := (Replication{}).String(); s != "not read" {
		t.Errorf("zero Replication's String() = %q", s)
	}
}
