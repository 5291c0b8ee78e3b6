package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/natsbackend"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func init() { register("nats", openNATS) }

func openNATS(ctx context.Context, workdir, ns string, owner bool) (*Store, error) {
	url, err := needEnv("ANARCHON_TEST_NATS_URL")
	if err != nil {
		return nil, err
	}
	// Each run gets its own bucket and history stream, so runs do not see
	// each other's claims.
	suffix := ns
	opts := &natsbackend.Options{
		Bucket:         "bench_" + suffix,
		HistoryStream:  "BENCH_HISTORY_" + suffix,
		HistorySubject: "bench.history." + suffix,
	}
	var cl closers
	var mu sync.Mutex
	var conns []*nats.Conn
	var ops func(ctx context.Context) (int64, string, error)
	if mon := os.Getenv("ANARCHON_TEST_NATS_MONITOR_URL"); mon != "" {
		ops = func(ctx context.Context) (int64, string, error) {
			n, err := natsInMsgs(ctx, mon)
			return n, "messages received from clients (/varz in_msgs: publishes and requests, KV operations included)", err
		}
	}
	return &Store{
		Server: []string{"nats-server"},
		Name:   "nats",
		NS:     ns,
		Ops:    ops,
		Open: func(ctx context.Context) (anarchon.Backend, error) {
			return cl.backend(natsbackend.Open(url, opts))
		},
		Raw: func(ctx context.Context) (RawClaimer, error) {
			nc, err := nats.Connect(url)
			if err != nil {
				return nil, fmt.Errorf("bench: nats connect: %w", err)
			}
			js, err := jetstream.New(nc)
			if err != nil {
				nc.Close()
				return nil, err
			}
			kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
				Bucket: "benchraw_" + suffix, History: 1, Storage: jetstream.FileStorage,
				TTL: natsbackend.DefaultClaimTTL,
			})
			if err != nil {
				nc.Close()
				return nil, fmt.Errorf("bench: create raw bucket: %w", err)
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			return &natsRaw{kv: kv}, nil
		},
		Close: func() {
			cl.close()
			mu.Lock()
			defer mu.Unlock()
			if len(conns) > 0 && owner {
				if js, err := jetstream.New(conns[0]); err == nil {
					ctx, cancel := deadline(5e9)
					_ = js.DeleteKeyValue(ctx, "benchraw_"+suffix)
					_ = js.DeleteKeyValue(ctx, opts.Bucket)
					_ = js.DeleteStream(ctx, opts.HistoryStream)
					cancel()
				}
			}
			for _, nc := range conns {
				nc.Close()
			}
		},
	}, nil
}

// natsRaw is KV Create: a put the server accepts only if the key has no
// value.
type natsRaw struct{ kv jetstream.KeyValue }

func (r *natsRaw) Claim(ctx context.Context, job string, slot int64, token string) (bool, error) {
	val := []byte(`{"t":"` + token + `","i":"bench"}`)
	_, err := r.kv.Create(ctx, "c."+job+"."+strconv.FormatInt(slot, 10), val)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return false, nil
	}
	return err == nil, err
}

// natsInMsgs reads in_msgs, the messages the server received from
// clients, from its monitoring endpoint's /varz.
func natsInMsgs(ctx context.Context, monitor string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(monitor, "/")+"/varz", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var v struct {
		InMsgs int64 `json:"in_msgs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return 0, fmt.Errorf("bench: nats /varz: %w", err)
	}
	return v.InMsgs, nil
}
