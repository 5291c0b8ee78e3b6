package natsbackend

import (
	"context"
	"log/slog"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
)

// AutoReplicas, as [Options.Replicas], creates the bucket and the stream
// with 3 replicas when the connected server is part of a cluster and the
// client knows of three or more servers (listed in the URL, or announced by
// the cluster), and with 1 otherwise.
const AutoReplicas = -1

// Topology is what Init found about the store's replication: it is read
// when the backend first binds the bucket and the stream, and logged (see
// [Options.Replicas]).
type Topology struct {
	// Cluster is the name of the cluster of the server the connection is
	// on; "" for a server outside a cluster.
	Cluster string
	// Servers is how many servers the client knows: those of the URL and
	// those the cluster announced. It counts the cluster's size only as far
	// as servers announce themselves (they do unless "no_advertise" is set).
	Servers int
	// BucketReplicas and StreamReplicas are the replicas of the KV bucket
	// and of the history stream, as the server reports them; 0 when not
	// known.
	BucketReplicas, StreamReplicas int
}

// Topology returns what the first successful Init (or call) found; the
// zero Topology before that.
func (b *Backend) Topology() Topology {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.topo
}

// cluster returns the connected server's cluster name and the number of
// servers the client knows.
func (b *Backend) cluster() (string, int) {
	nc := b.js.Conn()
	if nc == nil {
		return "", 0
	}
	known := append(nc.Servers(), nc.DiscoveredServers()...)
	slices.Sort(known)
	return nc.ConnectedClusterName(), len(slices.Compact(known))
}

// replicas is the replica count to create the bucket and the stream with.
func (b *Backend) replicas() int {
	if b.opts.Replicas != AutoReplicas {
		return b.opts.Replicas
	}
	if name, n := b.cluster(); name != "" && n >= 3 {
		return 3
	}
	return 1
}

func (b *Backend) readTopology(ctx context.Context, kv jetstream.KeyValue, hist jetstream.Stream) Topology {
	var t Topology
	t.Cluster, t.Servers = b.cluster()
	if st, err := kv.Status(ctx); err == nil {
		if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok && bs.StreamInfo() != nil {
			t.BucketReplicas = bs.StreamInfo().Config.Replicas
		}
	}
	if info := hist.CachedInfo(); info != nil {
		t.StreamReplicas = info.Config.Replicas
	}
	return t
}

// reportTopology logs the store's replication once, and a WARN for a
// setup that a single server's loss can break, or that differs from what
// Options.Replicas asks: an existing bucket is never changed here, since
// changing replicas moves data and is the operator's call.
func (b *Backend) reportTopology(ctx context.Context, t Topology) {
	l := b.logger()
	attrs := []slog.Attr{
		slog.String("bucket", b.opts.Bucket), slog.Int("bucket_replicas", t.BucketReplicas),
		slog.String("stream", b.opts.HistoryStream), slog.Int("stream_replicas", t.StreamReplicas),
		slog.String("cluster", t.Cluster), slog.Int("servers_known", t.Servers),
	}
	l.LogAttrs(ctx, slog.LevelInfo, "nats store bound", attrs...)
	if want := b.opts.Replicas; want != AutoReplicas && t.BucketReplicas != 0 && t.BucketReplicas != want {
		l.LogAttrs(ctx, slog.LevelWarn, "nats: the bucket exists with another replica count than Options.Replicas (replicas= in a daemon URL) asks; it is used as it is (change it with \"nats stream edit KV_<bucket> --replicas N\")",
			append(attrs, slog.Int("replicas_wanted", want))...)
	}
	if t.Cluster != "" && (t.BucketReplicas == 1 || t.StreamReplicas == 1) {
		l.LogAttrs(ctx, slog.LevelWarn, "nats: one replica on a cluster: losing or freezing the one server that holds the bucket stops every claim until it is back, and losing its disk loses every claim (a slot may then run twice); use 3 replicas",
			attrs...)
	}
}
