package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/anarchon/anarchon/natsbackend"
)

func TestOpenNATSReplicasParam(t *testing.T) {
	for _, q := range []string{"replicas=0", "replicas=6", "replicas=three", "replicas="} {
		_, err := openStore("nats://user:s3cr3t@127.0.0.1:1,127.0.0.1:2?" + q)
		var se *StoreURLError
		if !errors.As(err, &se) || se.Code != StoreBadURL || !strings.Contains(err.Error(), "replicas") {
			t.Errorf("%s: err = %v, want bad_url naming replicas", q, err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("password in %q", err)
		}
	}
	// A good value gets to the connection, which fails on these ports.
	_, err := openStore("nats://user:s3cr3t@127.0.0.1:1,127.0.0.1:2?replicas=3")
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
