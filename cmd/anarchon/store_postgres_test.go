package main

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon/pgbackend"
)

// A multi-host PostgreSQL URL reaches pgx whole: every host, in order,
// and target_session_attrs, with anarchon's own parameters taken out.
func TestOpenStorePostgresMultiHost(t *testing.T) {
	raw := "postgres://app:s3cr3t-pw@10.0.0.1:5432,10.0.0.2:5433,db3:5434/app?target_session_attrs=read-write&schema=jobs&prefix=p_&connect_timeout=1"
	b, err := openStore(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	pb, ok := b.(*pgbackend.Backend)
	if !ok {
		t.Fatalf("openStore gave a %T", b)
	}
	if pb.Schema() != "jobs" || pb.Prefix() != "p_" {
		t.Errorf("schema %q prefix %q", pb.Schema(), pb.Prefix())
	}
	cc := pb.Pool().Config().ConnConfig
	hosts := []string{net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))}
	for _, f := range cc.Fallbacks {
		// sslmode=prefer (the default) gives each host a TLS and a
		// plain fallback, in a row.
		if h := net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port))); h != hosts[len(hosts)-1] {
			hosts = append(hosts, h)
		}
	}
	if got, want := strings.Join(hosts, ","), "10.0.0.1:5432,10.0.0.2:5433,db3:5434"; got != want {
		t.Errorf("hosts %s, want %s", got, want)
	}
	if cc.ValidateConnect == nil {
		t.Error("target_session_attrs=read-write did not reach pgx (no ValidateConnect)")
	}
	for k := range cc.RuntimeParams {
		if k == "schema" || k == "prefix" || k == "target_session_attrs" {
			t.Errorf("parameter %q would be sent to the server", k)
		}
	}
}

// Multi-host URLs are redacted and scrubbed like single-host ones: the
// password goes, every host stays.
func TestRedactPostgresMultiHost(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://app:s3cr3t@h1:5432,h2:5432/db?target_session_attrs=read-write":        "postgres://app:xxxxx@h1:5432,h2:5432/db?target_session_attrs=read-write",
		"postgresql://app:p@ss:w@rd@h1,h2,h3/db?target_session_attrs=read-write":          "postgresql://app:xxxxx@h1,h2,h3/db?target_session_attrs=read-write",
		"postgres://h1:5432,h2:5432/db?user=app&password=s3cr3t&target_session_attrs=any": "postgres://h1:5432,h2:5432/db?user=app&password=xxxxx&target_session_attrs=any",
		"postgres://[::1]:5432,[::1]:5433/db?target_session_attrs=read-write":             "postgres://[::1]:5432,[::1]:5433/db?target_session_attrs=read-write",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q)\n = %q\nwant %q", in, got, want)
		}
	}
	raw := "postgres://app:s3cr3t-pw@127.0.0.1:1,127.0.0.1:2/db?target_session_attrs=read-write"
	msg := scrub("failed to connect to `user=app database=db`: 127.0.0.1:1: s3cr3t-pw; url "+raw, raw)
	if strings.Contains(msg, "s3cr3t") || !strings.Contains(msg, "127.0.0.1:1,127.0.0.1:2") {
		t.Errorf("scrub: %q", msg)
	}
}

// With no server answering on any host, Init fails with pgx's error, and
// neither the error nor the StoreURLError of a URL that does not parse
// holds the password.
func TestOpenStorePostgresMultiHostNoServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // a port nothing listens on
	raw := "postgres://app:s3cr3t-pw@" + dead + "," + dead + "/db?target_session_attrs=read-write&connect_timeout=2"
	b, err := openStore(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = b.Init(ctx)
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("Init = %v", err)
	}
	// The last host without a port: Go's parser (and pgx's) reads
	// ":5432,h2" as its port.
	_, err = openStore("postgres://app:s3cr3t-pw@h1:5432,h2/db?target_session_attrs=read-write")
	var se *StoreURLError
	if !errors.As(err, &se) || se.Code != StoreBadURL || strings.Contains(err.Error(), "s3cr3t") ||
		!strings.Contains(err.Error(), "give each its port") {
		t.Fatalf("last host without a port: %v", err)
	}
}

// Against a real server: a URL listing a host where nothing listens first
// and the server second opens on the server, which reports its
// replication; the summary line and /status carry it.
func TestOpenStorePostgresMultiHostServer(t *testing.T) {
	u := os.Getenv("ANARCHON_TEST_POSTGRES_URL")
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("ANARCHON_TEST_POSTGRES_URL is not set: start a server with `bash scripts/services/postgres.sh DIR`")
		}
		t.Skip("ANARCHON_TEST_POSTGRES_URL is not set: start a server with `bash scripts/services/postgres.sh DIR`")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	at := strings.LastIndexByte(u, '@')
	slash := strings.IndexByte(u[at:], '/')
	if at < 0 || slash < 0 {
		t.Fatalf("ANARCHON_TEST_POSTGRES_URL is not a postgres://user:pass@host:port/db URL")
	}
	raw := u[:at+1] + dead + "," + u[at+1:at+slash] + u[at+slash:] + "&target_session_attrs=read-write&connect_timeout=2&prefix=multihost_"
	b, err := openStore(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.Init(ctx); err != nil {
		t.Fatalf("Init: %v", err)
	}
	r := storeReplication(b)
	if !strings.HasPrefix(r, string(pgbackend.TopologySingle)) {
		t.Errorf("replication %q, want the test server's single topology", r)
	}
	d := &daemon{backend: b, store: redact(raw)}
	var sb strings.Builder
	d.summary(&sb, nil, true)
	if !strings.Contains(sb.String(), "replication: "+r) || strings.Contains(sb.String(), "anarchon@") {
		t.Errorf("summary:\n%s", sb.String())
	}
}
