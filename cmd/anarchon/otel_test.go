package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// With OTEL_EXPORTER_OTLP_ENDPOINT set the daemon exports its spans over
// OTLP/HTTP: a collector stand-in receives claim and run spans of the job,
// and the daemon flushes them when it stops.
func TestOTLPExport(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	got := make(chan struct{}, 1)
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		if r.URL.Path == "/v1/traces" {
			bodies = append(bodies, b)
			select {
			case got <- struct{}{}:
			default:
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer col.Close()

	dir := t.TempDir()
	crontab := writeFile(t, dir, "crontab", fmt.Sprintf("# name: traced\n* * * * * * echo hi >> %s\n", filepath.Join(dir, "out")))
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "200")
	p := startDaemon(t, dir, "otel", "--crontab", crontab, "--store", "sqlite:"+filepath.Join(dir, "db.sqlite"), "--log-level", "warn")
	p.waitReady(t, 60*time.Second)
	select {
	case <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("no OTLP trace export within 30 s")
	}
	p.stop(t, 20*time.Second)
	mu.Lock()
	all := bytes.Join(bodies, nil)
	mu.Unlock()
	for _, want := range []string{"claim traced", "run traced", "anarchon.outcome", "anarchon.lateness_s", "service.instance.id"} {
		if !bytes.Contains(all, []byte(want)) {
			t.Errorf("exported spans lack %q", want)
		}
	}
}
