package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/natsbackend"
)

func TestOpenNATSReplicasParam(t *testing.T) {
	waitForStore.Store(false) // as every command but "run" opens the store
	for _, q := range []string{"replicas=0", "replicas=6", "replicas=three", "replicas=", "timeout=100ms", "timeout=2m", "timeout=3", "timeout=", "prefix=a.b", "prefix=a b"} {
		_, err := openStore("nats://user:s3cr3t@127.0.0.1:1,127.0.0.1:2?" + q)
		var se *StoreURLError
		name, _, _ := strings.Cut(q, "=")
		if !errors.As(err, &se) || se.Code != StoreBadURL || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v, want bad_url naming %s", q, err, name)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("password in %q", err)
		}
	}
	// A good value gets to the connection, which fails on these ports.
	_, err := openStore("nats://user:s3cr3t@127.0.0.1:1,127.0.0.1:2?replicas=3&timeout=1s")
	var se *StoreURLError
	if !errors.As(err, &se) || se.Code != StoreOpenFailed || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("err = %v, want open_failed without the password", err)
	}
}

// On a single server the default (natsbackend.AutoReplicas) creates one
// replica, and replicas=1 is accepted; the cluster forms are run by the
// failover drill in faults/.
func TestOpenNATSSingleServer(t *testing.T) {
	url := os.Getenv("ANARCHON_TEST_NATS_URL")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("ANARCHON_TEST_NATS_URL is not set")
		}
		t.Skip("ANARCHON_TEST_NATS_URL is not set: start a server with `bash scripts/services/nats.sh <dir>` and export what it prints")
	}
	for _, q := range []string{"", "&replicas=1"} {
		b, err := openStore(url + "?prefix=replicas" + randSuffix() + q)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		if err := b.Init(context.Background()); err != nil {
			t.Fatalf("%q: Init: %v", q, err)
		}
		topo := b.(*natsbackend.Backend).Topology()
		if topo.BucketReplicas != 1 || topo.StreamReplicas != 1 || topo.Cluster != "" {
			t.Errorf("%q: topology %+v, want one replica and no cluster", q, topo)
		}
		b.Close(context.Background())
	}
}

// Two deployments on one server with different prefixes keep apart both
// their claims and their history: a job of the same name in each shows
// only its own runs.
func TestOpenNATSPrefixSeparatesHistory(t *testing.T) {
	url := os.Getenv("ANARCHON_TEST_NATS_URL")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("ANARCHON_TEST_NATS_URL is not set")
		}
		t.Skip("ANARCHON_TEST_NATS_URL is not set: start a server with `bash scripts/services/nats.sh <dir>` and export what it prints")
	}
	ctx := context.Background()
	slot := time.Now().Truncate(time.Minute).Add(-time.Hour).UnixMilli()
	suffix := randSuffix()
	for i, prefix := range []string{"billing" + suffix, "reports" + suffix} {
		b, err := openStore(url + "?prefix=" + prefix)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close(ctx)
		if err := b.Init(ctx); err != nil {
			t.Fatalf("%s: Init: %v", prefix, err)
		}
		in := anarchon.ClaimInput{Job: "nightly", Slot: slot, Token: "t" + strconv.Itoa(i), InstanceID: prefix}
		if err := b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: "nightly", HistorySize: 10}); err != nil {
			t.Fatal(err)
		}
		if won, err := b.Claim(ctx, in); err != nil || !won {
			t.Fatalf("%s: claim of a slot the other prefix also claimed: %v, %v; want won", prefix, won, err)
		}
		if err := b.SaveResult(ctx, anarchon.SaveResultInput{Job: "nightly", HistorySize: 10, Result: anarchon.StoredResult{
			Slot: slot, Token: in.Token, InstanceID: prefix, Attempt: 1, Status: anarchon.StatusSuccess,
		}}); err != nil {
			t.Fatal(err)
		}
		recs, err := b.History(ctx, "nightly", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || recs[0].InstanceID != prefix {
			t.Errorf("%s: history %+v, want its own one run", prefix, recs)
		}
	}
}

// TestOpenNATSCluster starts three clustered nats-servers and opens the
// store as the daemon does, with every server in the URL: without
// "replicas" the bucket and the stream get three replicas, and an
// existing bucket keeps its replicas whatever the URL asks.
func TestOpenNATSCluster(t *testing.T) {
	bin := os.Getenv("ANARCHON_TEST_NATS_SERVER_BIN")
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("ANARCHON_TEST_NATS_SERVER_BIN is not set")
		}
		t.Skip("ANARCHON_TEST_NATS_SERVER_BIN is not set: scripts/services/nats.sh prints it; the test starts a cluster of its own")
	}
	url := startNATSCluster(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open := func(q string) natsbackend.Topology {
		t.Helper()
		for {
			// The servers start, then the cluster elects its JetStream
			// meta leader: until then connecting or Init fails.
			b, err := openStore(url + q)
			if err == nil {
				err = b.Init(ctx)
				if err == nil {
					defer b.Close(context.Background())
					return b.(*natsbackend.Backend).Topology()
				}
				b.Close(context.Background())
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: %v", q, err)
			}
			time.Sleep(200 * time.Millisecond) // waiting for other processes
		}
	}
	if got := open("?prefix=auto"); got.BucketReplicas != 3 || got.StreamReplicas != 3 || got.Cluster == "" || got.Servers != 3 {
		t.Errorf("default replicas on a cluster of 3: %+v, want R3", got)
	}
	if got := open("?prefix=auto&replicas=1"); got.BucketReplicas != 3 {
		t.Errorf("replicas=1 on an existing R3 bucket: %+v, want it left at R3", got)
	}
	if got := open("?prefix=one&replicas=1"); got.BucketReplicas != 1 {
		t.Errorf("replicas=1 on a new bucket: %+v, want R1", got)
	}
}

// startNATSCluster starts three nats-servers with JetStream clustered on
// loopback and returns the URL listing all three.
func startNATSCluster(t *testing.T, bin string) string {
	t.Helper()
	var client, cluster []int
	var routes, urls []string
	for range 3 {
		for _, ports := range []*[]int{&client, &cluster} {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			*ports = append(*ports, l.Addr().(*net.TCPAddr).Port)
			l.Close()
		}
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", cluster[len(cluster)-1]))
		urls = append(urls, fmt.Sprintf("127.0.0.1:%d", client[len(client)-1]))
	}
	for i := range 3 {
		cmd := exec.Command(bin, "-js", "-sd", t.TempDir(), "-a", "127.0.0.1", "-p", strconv.Itoa(client[i]),
			"-n", fmt.Sprintf("n%d", i+1), "--cluster_name", "anarchon-test",
			"--cluster", routes[i], "--routes", strings.Join(routes, ","))
		if err := cmd.Start(); err != nil {
			t.Fatalf("start nats-server: %v", err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	return "nats://" + strings.Join(urls, ",")
}

// For "run" (waitForStore), a NATS store that no server answers yet opens
// and keeps connecting; Init then fails at once with a transient error
// saying so, which the start retries (TestStartSchedulerRetries).
func TestOpenNATSWaitsForServer(t *testing.T) {
	waitForStore.Store(true)
	t.Cleanup(func() { waitForStore.Store(false) })
	b, err := openStore("nats://user:s3cr3t@127.0.0.1:1")
	if err != nil {
		t.Fatalf("open for run: %v; want a backend that keeps connecting", err)
	}
	defer b.Close(context.Background())
	err = b.Init(context.Background())
	if err == nil || anarchon.IsPermanent(err) || !strings.Contains(err.Error(), "not connected") || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("Init = %v; want a transient \"not connected\" error without the password", err)
	}
}
