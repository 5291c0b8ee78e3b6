package redisbackend_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/redisbackend"
	"github.com/redis/go-redis/v9"
)

// cutProxy forwards TCP connections to a Redis server. When armed, it
// forwards the next request as usual, waits for the server's reply (so
// the command DID run), drops that reply and cuts both connections: the
// client sees its connection die with the reply lost, the situation a
// retry with the same token must survive (SPEC §4, repeat safety).
type cutProxy struct {
	ln     net.Listener
	target string
	armed  atomic.Bool
	cut    chan struct{} // receives once per cut
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, cut: make(chan struct{}, 16)}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Go(func() {
			_, _ = io.Copy(s, c)
			_ = s.Close()
		})
		p.wg.Go(func() {
			defer c.Close()
			defer s.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				if n > 0 {
					if p.armed.CompareAndSwap(true, false) {
						// The server answered: the command ran. Lose the answer.
						_ = c.Close()
						_ = s.Close()
						p.cut <- struct{}{}
						return
					}
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		})
	}
}

// arm makes the proxy cut the connection that carries the next reply.
func (p *cutProxy) arm() { p.armed.Store(true) }

func (p *cutProxy) waitCut(t *testing.T) {
	t.Helper()
	select {
	case <-p.cut:
	case <-time.After(5 * time.Second):
		t.Fatal("the proxy did not cut a connection")
	}
}

// cutBackend returns a backend whose client goes through the proxy, with
// one connection and go-redis retries off, so that a cut reaches the
// caller as an error.
func cutBackend(t *testing.T, p *cutProxy, prefix string) *redisbackend.Backend {
	t.Helper()
	c := newClient(t, p.addr(), func(o *redis.Options) {
		o.PoolSize = 1
		o.MaxRetries = -1
	})
	b, err := redisbackend.New(c, &redisbackend.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Init(t.Context()); err != nil { // loads the scripts: EVALSHA will not fall back
		t.Fatal(err)
	}
	return b
}

// TestCutConnectionRetry covers every script: the call reaches Redis and
// runs, its reply is lost with the connection, and the same call repeated
// (same token) answers what the first call would have.
func TestCutConnectionRetry(t *testing.T) {
	addr := redisAddr(t)
	slot := time.Now().Truncate(time.Minute).Add(-time.Hour).UnixMilli()
	lease := time.Hour

	cases := []struct {
		name  string
		setup func(e env) string // returns the token the cut call uses
		call  func(ctx context.Context, b *redisbackend.Backend, e env, tok string) (any, error)
		want  any
		check func(e env, tok string) // after the retry
		// ran proves, between the cut and the retry, that the cut call ran
		// on the server. Defaults to check.
		ran func(e env, tok string)
	}{
		{
			name: "Claim",
			call: func(ctx context.Context, b *redisbackend.Backend, e env, tok string) (any, error) {
				return b.Claim(ctx, anarchon.ClaimInput{Job: e.job, Slot: slot, Token: tok, InstanceID: "a", HistorySize: 10})
			},
			want: true,
			check: func(e env, tok string) {
				ok, err := e.direct.Claim(e.t.Context(), anarchon.ClaimInput{Job: e.job, Slot: slot, Token: randToken(), InstanceID: "b"})
				if err != nil || ok {
					e.t.Errorf("another token after the retried claim: %v, %v; want false", ok, err)
				}
			},
		},
		{
			name: "LeaseClaim",
			call: func(ctx context.Context, b *redisbackend.Backend, e env, tok string) (any, error) {
				out, err := b.Runs().Claim(ctx, anarchon.RunClaim{
					ClaimInput: anarchon.ClaimInput{Job: e.job, Slot: slot, Token: tok, InstanceID: "a"},
					Lease:      lease, MaxAttempts: 3,
				})
				return [2]any{out.Kind, out.Attempt}, err
			},
			want: [2]any{anarchon.OutcomeWon, 1},
			check: func(e env, tok string) {
				out, err := e.runs.Claim(e.t.Context(), anarchon.RunClaim{
					ClaimInput: anarchon.ClaimInput{Job: e.job, Slot: slot, Token: randToken(), InstanceID: "b"},
					Lease:      lease, MaxAttempts: 3,
				})
				if err != nil || out.Kind != anarchon.OutcomeRunning || out.Holder != "a" || out.Attempt != 1 {
					e.t.Errorf("another token after the retried claim: %+v, %v; want running, holder a, attempt 1", out, err)
				}
			},
		},
		{
			name:  "Heartbeat",
			setup: leaseRun(slot, lease),
			call: func(ctx context.Context, b *redisbackend.Backend, e env, tok string) (any, error) {
				return b.Runs().Heartbeat(ctx, anarchon.HeartbeatInput{Job: e.job, Slot: slot, Token: tok, Lease: 2 * lease})
			},
			want: true,
			ran: func(e env, tok string) {
				runs, err := e.runs.Active(e.t.Context(), e.job)
				if err != nil || len(runs) != 1 || time.Until(runs[0].LeaseUntil) < lease+lease/2 {
					e.t.Errorf("after the cut heartbeat: Active %+v, %v; want the lease extended to 2h", runs, err)
				}
			},
		},
		{
			name:  "Finish",
			setup: leaseRun(slot, lease),
			call: func(ctx context.Context, b *redisbackend.Backend, e env, tok string) (any, error) {
				return b.Runs().Finish(ctx, anarchon.FinishInput{Job: e.job, Slot: slot, Token: tok, Status: anarchon.StatusSuccess})
			},
			want: true,
			check: func(e env, tok string) {
				out, err := e.runs.Claim(e.t.Context(), anarchon.RunClaim{
					ClaimInput: anarchon.ClaimInput{Job: e.job, Slot: slot, Token: randToken(), InstanceID: "b"},
					Lease:      lease, MaxAttempts: 3,
				})
				if err != nil || out.Kind != anarchon.OutcomeDone || out.Status != anarchon.StatusSuccess {
					e.t.Errorf("claim after the retried finish: %+v, %v; want done, success", out, err)
				}
			},
		},
		{
			name:  "Release",
			setup: leaseRun(slot, lease),
			call: func(ctx context.Context, b *redisbackend.Backend, e env, tok string) (any, error) {
				return b.Runs().Release(ctx, anarchon.ReleaseInput{Job: e.job, Slot: slot, Token: tok})
			},
			want: true,
			ran: func(e env, tok string) {
				runs, err := e.runs.Active(e.t.Context(), e.job)
				if err != nil || len(runs) != 1 || runs[0].State != anarchon.RunStateReleased {
					e.t.Errorf("after the cut release: Active %+v, %v; want the run released", runs, err)
				}
			},
			check: func(e env, tok string) {
				out, err := e.runs.Claim(e.t.Context(), anarchon.RunClaim{
					ClaimInput: anarchon.ClaimInput{Job: e.job, Slot: slot, Token: randToken(), InstanceID: "b"},
					Lease:      lease, MaxAttempts: 3,
				})
				if err != nil || out.Kind != anarchon.OutcomeWon || out.Attempt != 2 {
					e.t.Errorf("claim after the retried release: %+v, %v; want won, attempt 2", out, err)
				}
			},
		},
		{
			name:  "Active",
			setup: leaseRun(slot, lease),
			call: func(ctx context.Context, b *redisbackend.Backend, e env, tok string) (any, error) {
				runs, err := b.Runs().Active(ctx, e.job)
				if len(runs) != 1 {
					return len(runs), err
				}
				return [3]any{runs[0].Token == tok, runs[0].State, runs[0].Live}, err
			},
			want: [3]any{true, anarchon.RunStateRunning, true},
		},
		{
			name: "RecordManualRun",
			call: func(ctx context.Context, b *redisbackend.Backend, e env, tok string) (any, error) {
				return b.RecordManualRun(ctx, anarchon.ClaimInput{Job: e.job, Slot: slot, Token: tok, InstanceID: "a"})
			},
			want: slot,
			check: func(e env, tok string) {
				recs, err := e.direct.History(e.t.Context(), e.job, 0)
				if err != nil || len(recs) != 1 || !recs[0].Manual || recs[0].Token != tok {
					e.t.Errorf("history after the retried manual run: %+v, %v; want one manual record", recs, err)
				}
			},
		},
		{
			name: "SaveResult",
			setup: func(e env) string {
				tok := randToken()
				if ok, err := e.direct.Claim(e.t.Context(), anarchon.ClaimInput{Job: e.job, Slot: slot, Token: tok, InstanceID: "a"}); err != nil || !ok {
					e.t.Fatalf("setup claim: %v %v", ok, err)
				}
				return tok
			},
			call: func(ctx context.Context, b *redisbackend.Backend, e env, tok string) (any, error) {
				err := b.SaveResult(ctx, anarchon.SaveResultInput{Job: e.job, Result: anarchon.StoredResult{Slot: slot, Token: tok, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess}, HistorySize: 1})
				return nil, err
			},
			want: nil,
			check: func(e env, tok string) {
				recs, err := e.direct.History(e.t.Context(), e.job, 0)
				if err != nil || len(recs) != 1 || recs[0].Status != anarchon.StatusSuccess || recs[0].Token != tok {
					e.t.Errorf("history after the retried save: %+v, %v; want one success record", recs, err)
				}
				ok, err := e.direct.Claim(e.t.Context(), anarchon.ClaimInput{Job: e.job, Slot: slot, Token: tok, InstanceID: "a"})
				if err != nil || !ok {
					e.t.Errorf("repeat of the claim after the retried save: %v, %v; want true", ok, err)
				}
			},
		},
		{
			name:  "FinishResult",
			setup: leaseRun(slot, lease),
			call: func(ctx context.Context, b *redisbackend.Backend, e env, tok string) (any, error) {
				return b.Runs().(anarchon.ResultFinisher).FinishResult(ctx, anarchon.SaveResultInput{Job: e.job, Result: anarchon.StoredResult{Slot: slot, Token: tok, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess}, HistorySize: 10})
			},
			want: true,
			check: func(e env, tok string) {
				recs, err := e.direct.History(e.t.Context(), e.job, 0)
				if err != nil || len(recs) != 1 || recs[0].Status != anarchon.StatusSuccess || recs[0].Token != tok {
					e.t.Errorf("history after the retried finish: %+v, %v; want one success record", recs, err)
				}
			},
		},
		{
			name: "History",
			setup: func(e env) string {
				tok := randToken()
				if ok, err := e.direct.Claim(e.t.Context(), anarchon.ClaimInput{Job: e.job, Slot: slot, Token: tok, InstanceID: "a"}); err != nil || !ok {
					e.t.Fatalf("setup claim: %v %v", ok, err)
				}
				return tok
			},
			call: func(ctx context.Context, b *redisbackend.Backend, e env, tok string) (any, error) {
				recs, err := b.History(ctx, e.job, 0)
				if len(recs) != 1 {
					return len(recs), err
				}
				return [2]any{recs[0].Token == tok, recs[0].Status}, err
			},
			want: [2]any{true, anarchon.StatusRunning},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prefix := freshPrefix(t, addr)
			p := startCutProxy(t, addr)
			b := cutBackend(t, p, prefix)
			direct := newBackend(t, addr, prefix, nil)
			e := env{t: t, direct: direct, runs: direct.Runs(), job: "cut-" + tc.name}
			tok := randToken()
			if tc.setup != nil {
				tok = tc.setup(e)
			}
			p.arm()
			got, err := tc.call(t.Context(), b, e, tok)
			if err == nil {
				t.Fatalf("call through a cut connection returned %v and no error", got)
			}
			p.waitCut(t)
			if errors.Is(err, redisbackend.ErrInvalidInput) || errors.Is(err, redisbackend.ErrUnexpectedReply) {
				t.Fatalf("cut connection: error %v, want a network error", err)
			}
			var ne net.Error
			if !errors.Is(err, io.EOF) && !errors.As(err, &ne) {
				t.Errorf("cut connection: error %v does not wrap io.EOF or a net.Error", err)
			}
			if tc.ran != nil {
				tc.ran(e, tok)
			} else if tc.check != nil {
				tc.check(e, tok)
			}
			got, err = tc.call(t.Context(), b, e, tok)
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if got != tc.want {
				t.Errorf("retry answered %v, want %v (what the first call would have answered)", got, tc.want)
			}
			if tc.check != nil {
				tc.check(e, tok)
			}
		})
	}
}

// env is what a case of TestCutConnectionRetry works with.
type env struct {
	t      *testing.T
	direct *redisbackend.Backend // a backend on a direct client, for setup and checks
	runs   anarchon.RunStore     // direct's RunStore
	job    string
}

// leaseRun sets up a running lease of slot and returns its token.
func leaseRun(slot int64, lease time.Duration) func(e env) string {
	return func(e env) string {
		tok := randToken()
		out, err := e.runs.Claim(e.t.Context(), anarchon.RunClaim{
			ClaimInput: anarchon.ClaimInput{Job: e.job, Slot: slot, Token: tok, InstanceID: "a"},
			Lease:      lease, MaxAttempts: 3,
		})
		if err != nil || out.Kind != anarchon.OutcomeWon {
			e.t.Fatalf("setup lease claim: %+v %v", out, err)
		}
		return tok
	}
}

// TestCutConnectionClientRetry: with go-redis's own retries on (the
// default MaxRetries), a claim whose reply is lost is re-sent by the client
// with the same token and the caller just sees the win.
func TestCutConnectionClientRetry(t *testing.T) {
	addr := redisAddr(t)
	prefix := freshPrefix(t, addr)
	p := startCutProxy(t, addr)
	c := newClient(t, p.addr(), func(o *redis.Options) { o.PoolSize = 1 })
	b, err := redisbackend.New(c, &redisbackend.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Truncate(time.Minute).Add(-time.Hour).UnixMilli()
	in := anarchon.ClaimInput{Job: "auto", Slot: slot, Token: randToken(), InstanceID: "a"}
	p.arm()
	ok, err := b.Claim(t.Context(), in)
	p.waitCut(t)
	if err != nil || !ok {
		t.Fatalf("claim through a cut connection with client retries: %v, %v; want true", ok, err)
	}
	in.Token = randToken()
	if ok, err := b.Claim(t.Context(), in); err != nil || ok {
		t.Errorf("another token: %v, %v; want false", ok, err)
	}
}
