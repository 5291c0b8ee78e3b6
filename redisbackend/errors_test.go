package redisbackend_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/redisbackend"
	"github.com/redis/go-redis/v9"
)

// reply is an error reply as go-redis returns it (a redis.Error).
type reply string

func (r reply) Error() string { return string(r) }
func (reply) RedisError()     {}

func TestIsPermanentReplies(t *testing.T) {
	for msg, want := range map[string]bool{
		"WRONGTYPE Operation against a key holding the wrong kind of value": true,
		"ERR syntax error": true,
		"ERR user_script:1: Script attempted to access nonexistent global variable": true,
		"NOAUTH Authentication required.":                                           true,
		"WRONGPASS invalid username-password pair":                                  true,
		"NOPERM this user has no permissions":                                       true,
		"EXECABORT Transaction discarded":                                           true,
		"ERR max number of clients reached":                                         false,
		"LOADING Redis is loading the dataset in memory":                            false,
		"BUSY Redis is busy running a script":                                       false,
		"TRYAGAIN Multiple keys request during rehashing of slot":                   false,
		"CLUSTERDOWN The cluster is down":                                           false,
		"READONLY You can't write against a read only replica.":                     false,
		"MASTERDOWN Link with MASTER is down":                                       false,
		"NOSCRIPT No matching script":                                               false,
		"OOM command not allowed when used memory > 'maxmemory'":                    false,
	} {
		if got := redisbackend.IsPermanent(fmt.Errorf("wrapped: %w", reply(msg))); got != want {
			t.Errorf("IsPermanent(%q) = %v, want %v", msg, got, want)
		}
	}
	for _, err := range []error{context.Canceled, redis.ErrClosed, &net.OpError{Op: "dial", Err: errors.New("connection refused")}} {
		if redisbackend.IsPermanent(err) {
			t.Errorf("IsPermanent(%v) = true", err)
		}
	}
	for _, err := range []error{redisbackend.ErrInvalidInput, redisbackend.ErrUnexpectedReply, redisbackend.ErrServerTooOld} {
		if !anarchon.IsPermanent(fmt.Errorf("x: %w", err)) {
			t.Errorf("%v is not marked permanent", err)
		}
	}
	if anarchon.IsPermanent(redisbackend.ErrNotReplicated) {
		t.Error("ErrNotReplicated is marked permanent; a retry may reach the replicas")
	}
}

// TestErrorClasses: errors from a real server are marked
// anarchon.Permanent when a retry cannot fix them (a key of the wrong
// type, bad input, a closed backend), and not when it may (a cancelled
// context, an unreachable server).
func TestErrorClasses(t *testing.T) {
	addr := redisAddr(t)
	ctx := t.Context()
	prefix := freshPrefix(t, addr)
	b := newBackend(t, addr, prefix, nil)
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error, permanent bool) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error", what)
			return
		}
		if anarchon.IsPermanent(err) != permanent {
			t.Errorf("%s: %v: permanent %v, want %v", what, err, anarchon.IsPermanent(err), permanent)
		}
	}
	in := anarchon.ClaimInput{Job: "classes", Slot: 1000, Token: "t", InstanceID: "i"}
	_, err := b.Claim(ctx, anarchon.ClaimInput{Job: "", Slot: 1000, Token: "t"})
	check("Claim with an empty job name", err, true)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = b.Claim(cancelled, in)
	check("Claim on a cancelled context", err, false)

	// Something else wrote a string where the job's run hash belongs.
	raw := newClient(t, addr, nil)
	if err := raw.Set(ctx, "{"+prefix+":classes}:run", "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err = b.Claim(ctx, in)
	check("Claim when the run key holds a string", err, true)
	_, err = b.Runs().Claim(ctx, anarchon.RunClaim{ClaimInput: in, Lease: time.Minute})
	check("RunStore.Claim when the run key holds a string", err, true)
	_, err = b.History(ctx, "classes", 0)
	check("History when the run key holds a string", err, true)

	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = b.Claim(ctx, in)
	check("Claim after Close", err, true)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().String()
	l.Close()
	db, err := redisbackend.New(redis.NewClient(&redis.Options{Addr: down, MaxRetries: -1, DialTimeout: time.Second}), &redisbackend.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	check("Init against a server that is down", db.Init(ctx), false)
}
