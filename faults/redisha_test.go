package faults_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon/faults"
	"github.com/redis/go-redis/v9"
)

// The launchers of the replicated Redis topologies the failover drills
// run on: a primary with replicas watched by three Sentinels, and a Redis
// Cluster of three masters with a replica each. Every node is a
// redis-server process of the test's own (the binary
// scripts/services/redis.sh installs), on a free loopback port, in a
// server (servers_test.go), so that a drill can SIGKILL it and start it
// again on the same port and directory.

const sentinelMaster = "anarchon" // the name the Sentinels know the primary by

// redisBin returns the redis-server binary. The drills run, like every
// Redis integration test, only with ANARCHON_TEST_REDIS_ADDR set (they
// start servers of their own from the same binary): without it, or
// without the binary, the test is skipped, or fails when CI=true.
func redisBin(t *testing.T) string {
	t.Helper()
	need(t, "ANARCHON_TEST_REDIS_ADDR", "redis")
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found in PATH (scripts/services/redis.sh installs it): %v", err)
	}
	return bin
}

// redisNode is one redis-server of a topology. base are the arguments
// every start gets (a Sentinel's config file first, then the address and
// directory); the replication arguments that follow them (the role) are
// the first start's until restartAs replaces them.
type redisNode struct {
	*server
	base []string
}

// startRedisNode starts a redis-server without persistence (a failover,
// not a restart, is what the drills test) and with config first if not
// empty (a Sentinel's, which Sentinel rewrites).
func startRedisNode(t *testing.T, bin, config string, role ...string) *redisNode {
	t.Helper()
	dir := t.TempDir()
	// A cluster node also listens on port+10000 (its bus).
	offset := 0
	if slices.Contains(role, "--cluster-enabled") {
		offset = 10000
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePortPlus(t, offset))
	_, port, _ := strings.Cut(addr, ":")
	var base []string
	if config != "" {
		base = append(base, config)
	}
	base = append(base, "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no", "--dir", dir)
	s := newServer(t, "redis-"+port, bin, append(append([]string(nil), base...), role...), addr,
		func(a string) error { return probe(a, "PING\r\n", "+PONG") })
	return &redisNode{server: s, base: base}
}

// restartAs starts a killed node again on its port and directory, with
// role instead of its first replication arguments.
func (n *redisNode) restartAs(role ...string) error {
	n.mu.Lock()
	n.args = append(append([]string(nil), n.base...), role...)
	n.mu.Unlock()
	_, err := startRetrying(n.start)
	return err
}

// waitFor polls cond every 100 ms until it holds, or fails the test after
// limit. The servers' replication, Sentinel discovery and cluster
// promotion have no event to wait on.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond) // another process's state
	}
}

// redisInfo returns INFO section of the server at addr, or "".
func redisInfo(ctx context.Context, addr, section string) string {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond})
	defer c.Close()
	info, _ := c.Info(ctx, section).Result()
	return info
}

func infoValue(info, field string) (string, bool) {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v, true
		}
	}
	return "", false
}

// waitInfo waits (15 s at most) until INFO section on addr shows field
// with value.
func waitInfo(t *testing.T, addr, section, field, value string) {
	t.Helper()
	waitFor(t, 15*time.Second, fmt.Sprintf("%s: INFO %s never showed %s:%s", addr, section, field, value), func() bool {
		v, ok := infoValue(redisInfo(t.Context(), addr, section), field)
		return ok && v == value
	})
}

// sentinelSet is a primary, two replicas and three Sentinels.
type sentinelSet struct {
	t         *testing.T
	wait      int                   // min-replicas-to-write on every data node (the claims' WAIT)
	nodes     map[string]*redisNode // data nodes by address
	sentinels []string
	primary   string // as started; current() asks the servers
	// repl, when not nil, is a proxy in front of the first primary; the
	// replicas replicate through it (replicaof its port), so it can stall
	// their replication. Clients and Sentinels reach the primary directly.
	repl *faults.Proxy
}

// startSentinelSet starts a primary and two replicas, each with
// min-replicas-to-write wait (a primary cut off from its replicas refuses
// claims), and three Sentinels tuned to notice a dead primary in a second
// and fail over at once (quorum 2). It returns once every Sentinel sees
// the primary, both replicas and the other Sentinels.
//
// With viaProxy the replicas replicate from the primary through a
// faults.Proxy (s.repl), and the Sentinels' failover-timeout is 10 min
// instead of 4 s: a Sentinel repoints a replica that replicates from an
// address other than the master's once failover-timeout has passed
// (+fix-slave-config), which would take the proxy out of the path. The
// promotion itself does not wait for failover-timeout; a failed failover
// is retried later. The proxy serves the first primary only: after a
// failover the replicas replicate directly.
func startSentinelSet(t *testing.T, wait int, viaProxy bool) *sentinelSet {
	bin := redisBin(t)
	s := &sentinelSet{t: t, wait: wait, nodes: map[string]*redisNode{}}
	p := startRedisNode(t, bin, "", s.minReplicas()...)
	s.primary = p.addr
	s.nodes[p.addr] = p
	source := s.primary
	failoverTimeout := 4000
	if viaProxy {
		repl, err := faults.NewProxy(s.primary)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = repl.Close() })
		s.repl, source, failoverTimeout = repl, repl.Addr(), 600000
	}
	for range 2 {
		r := startRedisNode(t, bin, "", s.replicaOf(source)...)
		s.nodes[r.addr] = r
	}
	waitInfo(t, s.primary, "replication", "connected_slaves", "2")
	if wait > 0 {
		waitInfo(t, s.primary, "replication", "min_slaves_good_slaves", "2")
	}
	host, port, _ := strings.Cut(s.primary, ":")
	for range 3 {
		conf := filepath.Join(t.TempDir(), "sentinel.conf")
		text := fmt.Sprintf("sentinel monitor %[1]s %[2]s %[3]s 2\nsentinel down-after-milliseconds %[1]s 1000\n"+
			"sentinel failover-timeout %[1]s %[4]d\nsentinel parallel-syncs %[1]s 2\n", sentinelMaster, host, port, failoverTimeout)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		sn := startRedisNode(t, bin, conf, "--sentinel")
		s.sentinels = append(s.sentinels, sn.addr)
	}
	waitFor(t, 30*time.Second, "the Sentinels never saw 2 replicas and each other", func() bool {
		for _, a := range s.sentinels {
			if m, r, o := sentinelView(t.Context(), a); m != s.primary || r != 2 || o != 2 {
				return false
			}
		}
		return true
	})
	return s
}

func (s *sentinelSet) minReplicas() []string {
	return []string{"--min-replicas-to-write", strconv.Itoa(s.wait), "--min-replicas-max-lag", "5"}
}

func (s *sentinelSet) replicaOf(primary string) []string {
	return append([]string{"--replicaof", strings.Replace(primary, ":", " ", 1)}, s.minReplicas()...)
}

// sentinelView is what a Sentinel reports of the master: its address and
// how many replicas and other Sentinels it knows.
func sentinelView(ctx context.Context, addr string) (master string, replicas, sentinels int) {
	c := redis.NewSentinelClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond})
	defer c.Close()
	if m, err := c.GetMasterAddrByName(ctx, sentinelMaster).Result(); err == nil && len(m) == 2 {
		master = m[0] + ":" + m[1]
	}
	if r, err := c.Replicas(ctx, sentinelMaster).Result(); err == nil {
		for _, rep := range r {
			if !strings.Contains(rep["flags"], "down") && !strings.Contains(rep["flags"], "disconnected") {
				replicas++
			}
		}
	}
	if o, err := c.Sentinels(ctx, sentinelMaster).Result(); err == nil {
		sentinels = len(o)
	}
	return master, replicas, sentinels
}

// killPrimary SIGKILLs the data node at addr, waits (30 s at most) until
// the first Sentinel names another primary, and returns it. If the
// replicas replicate through s.repl, it cuts their links right after the
// kill: bytes the proxy held die with the primary, as the unsent part of
// its stream would.
func (s *sentinelSet) killPrimary(addr string) (newPrimary string) {
	s.nodes[addr].kill()
	if s.repl != nil {
		s.repl.Set(faults.Cut, 0)
	}
	waitFor(s.t, 30*time.Second, "no Sentinel named a new primary", func() bool {
		m, _, _ := sentinelView(s.t.Context(), s.sentinels[0])
		if m != "" && m != addr {
			newPrimary = m
			return true
		}
		return false
	})
	return newPrimary
}

// writableSince watches the primary at addr until deadline and returns
// since when it has taken writes without a break: had the min-replicas-to-
// write good replicas it needs (s.wait) at every look from then to the
// deadline. ok is false if it could not take writes at the last look. A
// promoted replica can take writes and lose them again when the other
// replica it had leaves to resync.
func (s *sentinelSet) writableSince(addr string, deadline time.Time) (since time.Time, ok bool) {
	for time.Now().Before(deadline) {
		info := redisInfo(s.t.Context(), addr, "replication")
		role, _ := infoValue(info, "role")
		v, _ := infoValue(info, "min_slaves_good_slaves")
		good, _ := strconv.Atoi(v)
		switch {
		case role != "master" || good < s.wait:
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		}
		time.Sleep(50 * time.Millisecond) // another process's state
	}
	return since, !since.IsZero()
}

// rejoin starts the killed node at addr again as a replica of newPrimary
// and waits (30 s at most) for a primary with two good replicas (any
// primary, without WAIT), which it returns.
func (s *sentinelSet) rejoin(addr, newPrimary string) string {
	if err := s.nodes[addr].restartAs(s.replicaOf(newPrimary)...); err != nil {
		s.t.Fatalf("redis-server %s did not start again: %v", addr, err)
	}
	current := ""
	waitFor(s.t, 30*time.Second, "no primary with 2 good replicas after the restart", func() bool {
		for a := range s.nodes {
			info := redisInfo(s.t.Context(), a, "replication")
			role, _ := infoValue(info, "role")
			good, _ := infoValue(info, "min_slaves_good_slaves")
			if role == "master" && (good == "2" || s.wait == 0) {
				current = a
				return true
			}
		}
		return false
	})
	return current
}

// redisCluster is three masters and their replicas.
type redisCluster struct {
	t     *testing.T
	addrs []string // masters first, then their replicas in the same order
	nodes map[string]*redisNode
}

// startRedisCluster starts three masters and perMaster replicas of each
// (cluster-node-timeout 1 s), makes the masters hold a third of the hash
// slots each and the others their replicas, and returns once every node
// says the cluster is ok. Replica k of master m is addrs[3+3k+m].
func startRedisCluster(t *testing.T, perMaster int) *redisCluster {
	bin := redisBin(t)
	ctx := t.Context()
	c := &redisCluster{t: t, nodes: map[string]*redisNode{}}
	n := 3 * (1 + perMaster)
	for range n {
		nd := startRedisNode(t, bin, "", "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000")
		c.addrs = append(c.addrs, nd.addr)
		c.nodes[nd.addr] = nd
	}
	admin := func(addr string) *redis.Client {
		cl := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		t.Cleanup(func() { _ = cl.Close() })
		return cl
	}
	ids := make([]string, n)
	for i, a := range c.addrs {
		id, err := admin(a).Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
		if i > 0 {
			host, port, _ := strings.Cut(a, ":")
			if err := admin(c.addrs[0]).Do(ctx, "CLUSTER", "MEET", host, port).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, 30*time.Second, "the nodes never all met", func() bool {
		for _, a := range c.addrs {
			nodes, err := admin(a).ClusterNodes(ctx).Result()
			if err != nil || strings.Count(strings.TrimSpace(nodes), "\n")+1 != n {
				return false
			}
		}
		return true
	})
	for i, r := range [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}} {
		if err := admin(c.addrs[i]).Do(ctx, "CLUSTER", "ADDSLOTSRANGE", r[0], r[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 3; i < n; i++ {
		waitFor(t, 30*time.Second, "a replica never could follow its master", func() bool {
			return admin(c.addrs[i]).Do(ctx, "CLUSTER", "REPLICATE", ids[i%3]).Err() == nil
		})
	}
	for i := range 3 {
		waitInfo(t, c.addrs[i], "replication", "connected_slaves", strconv.Itoa(perMaster))
	}
	waitFor(t, 30*time.Second, "the cluster never was ok", func() bool {
		for _, a := range c.addrs {
			info, err := admin(a).ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
		}
		return true
	})
	return c
}

// keySlot is the hash slot of key.
func (c *redisCluster) keySlot(key string) int64 {
	cl := redis.NewClient(&redis.Options{Addr: c.addrs[0], MaxRetries: -1})
	defer cl.Close()
	slot, err := cl.ClusterKeySlot(c.t.Context(), key).Result()
	if err != nil {
		c.t.Fatal(err)
	}
	return slot
}

// masterOf is the master of a hash slot as the node at addr sees it
// (CLUSTER SHARDS), or "".
func masterOf(ctx context.Context, addr string, slot int64) string {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond})
	defer c.Close()
	shards, err := c.ClusterShards(ctx).Result()
	if err != nil {
		return ""
	}
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if slot < r.Start || slot > r.End {
				continue
			}
			for _, n := range sh.Nodes {
				if n.Role == "master" && n.Health == "online" {
					return n.IP + ":" + strconv.FormatInt(n.Port, 10)
				}
			}
		}
	}
	return ""
}

// killMasterOf SIGKILLs the master of a hash slot and waits (30 s at
// most) until a surviving node names another master for it. It returns
// the killed node and the new master.
func (c *redisCluster) killMasterOf(slot int64) (victim, promoted string) {
	victim = masterOf(c.t.Context(), c.addrs[0], slot)
	if c.nodes[victim] == nil {
		c.t.Fatalf("hash slot %d is on %q, not a node of the test", slot, victim)
	}
	var witness string
	for _, a := range c.addrs {
		if a != victim {
			witness = a
			break
		}
	}
	c.nodes[victim].kill()
	waitFor(c.t, 30*time.Second, "the cluster never promoted a replica", func() bool {
		m := masterOf(c.t.Context(), witness, slot)
		if m != "" && m != victim {
			promoted = m
			return true
		}
		return false
	})
	return victim, promoted
}
