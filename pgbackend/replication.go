package pgbackend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/anarchon/anarchon/sqlbackend"
)

// Topology names how the server anarchon claims on is replicated, as
// [Backend.Init] found it (see [Replication]).
type Topology string

// Topologies [Backend.Init] reports.
const (
	// TopologySingle: no standby is connected and
	// synchronous_standby_names is empty. Nothing to fail over to; a
	// crash keeps every acknowledged claim unless synchronous_commit is
	// off.
	TopologySingle Topology = "single"
	// TopologyAsync: standbys are connected but no commit waits for one
	// (synchronous_standby_names is empty). A failover to a standby that
	// was behind loses the claims it had not received: their slots can
	// run again, as Attempt 1 (the package's # Guarantees table).
	TopologyAsync Topology = "async standby"
	// TopologySync: synchronous_standby_names is set, so a commit waits
	// for the standbys it names (how long it waits, synchronous_commit
	// says). With synchronous_commit on or remote_apply, a claim is
	// acknowledged only once a synchronous standby has it on disk, and a
	// failover to that standby loses none.
	TopologySync Topology = "sync standby"
)

// Replication is what Init read of the server's replication, with one
// round trip before the migration: pg_is_in_recovery(), the
// synchronous_commit and synchronous_standby_names settings (as the
// backend's own sessions see them: a role's or a connection string's
// setting counts), and the physical standbys in pg_stat_replication
// (logical replication's walsenders are left out).
type Replication struct {
	// Topology is the kind of deployment, judged from the settings and
	// the standbys connected at Init.
	Topology Topology
	// SynchronousCommit is the synchronous_commit setting: on,
	// remote_apply, remote_write, local or off.
	SynchronousCommit string
	// SynchronousStandbyNames is the synchronous_standby_names setting,
	// "" when commits wait for no standby.
	SynchronousStandbyNames string
	// Standbys are the physical standbys streaming from the server at
	// Init.
	Standbys []Standby
	// Safe reports that the server acknowledges a claim only once it
	// survives a crash of the server and a failover to a synchronous
	// standby: a single server with synchronous_commit other than off, or
	// synchronous standbys with synchronous_commit on or remote_apply.
	// It assumes that a failover promotes a synchronous standby (as
	// Patroni and pg_auto_failover do): promoting an asynchronous one
	// loses what it had not received, whatever the primary's settings.
	Safe bool
	// Warnings name each risk found, as logged at WARN by Init; none when
	// Safe, except for an availability risk (commits waiting for a
	// synchronous standby that is not connected).
	Warnings []string
}

// Standby is one physical standby streaming from the server, a row of
// pg_stat_replication. Its State and SyncState are "" when the backend's
// role may not read them (they need pg_monitor or pg_read_all_stats).
type Standby struct {
	Name      string // application_name (cluster_name or the standby's primary_conninfo application_name)
	Addr      string // client_addr; "" for a Unix socket or when hidden
	State     string // startup, catchup, streaming, backup or stopping
	SyncState string // sync, quorum, potential or async
}

// String describes r in one line, for a start-up summary: the topology,
// the settings and the standbys by name and sync state.
func (r Replication) String() string {
	if r.Topology == "" {
		return "not read"
	}
	var b strings.Builder
	b.WriteString(string(r.Topology))
	fmt.Fprintf(&b, " (synchronous_commit=%s", r.SynchronousCommit)
	if r.SynchronousStandbyNames != "" {
		fmt.Fprintf(&b, ", synchronous_standby_names=%q", r.SynchronousStandbyNames)
	}
	if len(r.Standbys) > 0 {
		parts := make([]string, len(r.Standbys))
		for i, s := range r.Standbys {
			name := s.Name
			if name == "" {
				name = "?"
			}
			state := s.SyncState
			if state == "" {
				state = "unknown"
			}
			parts[i] = name + ":" + state
		}
		fmt.Fprintf(&b, ", standbys %s", strings.Join(parts, " "))
	}
	b.WriteString(")")
	if !r.Safe {
		b.WriteString(", unsafe")
	}
	return b.String()
}

// ErrStandby is returned by Init when the server is a standby (in
// recovery): it cannot take claims. It is not permanent, since the
// standby may be promoted; connect to the primary instead, e.g. by
// listing every server in the connection string with
// target_session_attrs=read-write.
var ErrStandby = errors.New("pgbackend: the server is a standby (in recovery) and cannot take claims: connect to the primary (list every host with target_session_attrs=read-write)")

// replicationQuery reads the settings and the physical standbys in one
// statement. Logical walsenders (whose pid is the active_pid of a logical
// slot) are not standbys; a physical standby without a slot has none.
const replicationQuery = `SELECT pg_is_in_recovery(), current_setting('synchronous_commit'),
  current_setting('synchronous_standby_names'),
  r.pid, r.application_name, host(r.client_addr), r.state, r.sync_state
FROM (SELECT 1) AS one
LEFT JOIN pg_stat_replication AS r ON r.pid NOT IN (
  SELECT s.active_pid FROM pg_replication_slots AS s WHERE s.slot_type = 'logical' AND s.active_pid IS NOT NULL)`

// readReplication runs replicationQuery on c.
func readReplication(ctx context.Context, c sqlbackend.Conn) (Replication, bool, error) {
	rows, err := c.All(ctx, replicationQuery)
	if err != nil {
		return Replication{}, false, fmt.Errorf("read replication settings: %w", err)
	}
	if len(rows) == 0 {
		return Replication{}, false, errors.New("read replication settings: no row")
	}
	var r Replication
	recovery := asBool(rows[0][0])
	r.SynchronousCommit = asString(rows[0][1])
	r.SynchronousStandbyNames = strings.TrimSpace(asString(rows[0][2]))
	for _, row := range rows {
		if len(row) < 8 {
			return Replication{}, false, errors.New("read replication settings: short row")
		}
		// The LEFT JOIN gives one row with a NULL pid when no standby is
		// connected. A standby's pid is visible to every role; its other
		// columns need pg_monitor or pg_read_all_stats.
		if row[3] == nil {
			continue
		}
		r.Standbys = append(r.Standbys, Standby{
			Name: asString(row[4]), Addr: asString(row[5]), State: asString(row[6]), SyncState: asString(row[7]),
		})
	}
	judge(&r)
	return r, recovery, nil
}

// judge sets r's Topology, Safe and Warnings from its settings and
// standbys.
func judge(r *Replication) {
	sc := strings.ToLower(r.SynchronousCommit)
	var sync, unknown int // standbys whose commits the primary waits for; whose state is hidden
	for _, s := range r.Standbys {
		switch s.SyncState {
		case "sync", "quorum":
			sync++
		case "":
			unknown++
		}
	}
	warn := func(format string, args ...any) { r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...)) }
	switch {
	case r.SynchronousStandbyNames != "":
		r.Topology = TopologySync
		switch sc {
		case "on", "remote_apply":
			r.Safe = true
		case "remote_write":
			warn("synchronous_commit=remote_write: a claim is acknowledged once a synchronous standby has written it but before it is on that standby's disk; losing the primary and the standby's operating system together can lose acknowledged claims (use on or remote_apply)")
		case "local", "off":
			warn("synchronous_commit=%s: commits do not wait for the synchronous standby; a failover can lose acknowledged claims, and their slots can run twice (use on or remote_apply)", sc)
		default:
			warn("synchronous_commit=%q is not one anarchon knows; replication not judged safe", r.SynchronousCommit)
		}
		if sync == 0 && unknown == 0 {
			warn("synchronous_standby_names is set but no synchronous standby is connected: every claim waits until one is")
		}
	case len(r.Standbys) > 0:
		r.Topology = TopologyAsync
		warn("async standby: a failover can lose acknowledged claims, and their slots can run twice (set synchronous_standby_names and synchronous_commit=on)")
	default:
		r.Topology = TopologySingle
		r.Safe = sc != "off"
	}
	if sc == "off" {
		// Whatever the topology: a crash of the primary loses the last
		// commits it acknowledged, even with standbys (they never got them).
		r.Safe = false
		warn("synchronous_commit=off: a crash of the server can lose acknowledged claims, and their slots can run twice")
	}
}

// logReplication logs r: INFO when there is replication to report, WARN
// per risk.
func logReplication(ctx context.Context, log *slog.Logger, r Replication) {
	attrs := []slog.Attr{
		slog.String("topology", string(r.Topology)),
		slog.String("synchronous_commit", r.SynchronousCommit),
		slog.String("synchronous_standby_names", r.SynchronousStandbyNames),
		slog.Int("standbys", len(r.Standbys)),
		slog.Bool("safe", r.Safe),
	}
	if r.Topology != TopologySingle {
		log.LogAttrs(ctx, slog.LevelInfo, "postgres: replication: "+r.String(), attrs...)
	}
	for _, w := range r.Warnings {
		log.LogAttrs(ctx, slog.LevelWarn, "postgres: "+w, attrs...)
	}
}

func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func asBool(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		return x == "t" || x == "true"
	case []byte:
		return string(x) == "t" || string(x) == "true"
	}
	return false
}
