package redisbackend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/redis/go-redis/v9"
)

// IsPermanent reports whether err is a Redis error reply that repeating
// the command gives again: WRONGTYPE (a key under the backend's prefix
// holds another kind of value), ERR (a syntax error, an unknown command,
// an error raised in a script), NOAUTH, WRONGPASS and NOPERM (credentials
// and ACLs), EXECABORT. Replies that a retry may get past are transient:
// LOADING, BUSY, TRYAGAIN, CLUSTERDOWN, READONLY and MASTERDOWN (a
// restart or failover), OOM (memory may be freed), NOREPLICAS, NOSCRIPT
// (go-redis loads the script again), "ERR max number of clients reached",
// and every error that is not a reply (the network, a context). The
// backend marks the errors it matches with anarchon.Permanent.
func IsPermanent(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	kind, _, _ := strings.Cut(msg, " ")
	switch kind {
	case "WRONGTYPE", "NOAUTH", "WRONGPASS", "NOPERM", "EXECABORT":
		return true
	case "ERR":
		return !strings.HasPrefix(msg, "ERR max number of clients")
	}
	return false
}

// wrap translates a driver error at the boundary. The native error stays
// reachable with errors.Is/As (net.Error, redis.Error, context errors);
// redis.Nil is never passed on as a result. Error replies a retry cannot
// fix (IsPermanent) and a closed backend are marked anarchon.Permanent.
func (b *Backend) wrap(op string, err error) error {
	if _, joined := sentinelErrs(err); errors.Is(err, redis.Nil) && !joined {
		// A nil reply to the command itself. Inside joined errors it is
		// a Sentinel's answer about the master (see unknownMaster), and
		// the others beside it say more.
		return fmt.Errorf("%w: %s: empty reply", ErrUnexpectedReply, op)
	}
	if b.closed.Load() && errors.Is(err, redis.ErrClosed) {
		return anarchon.Permanent(fmt.Errorf("redisbackend: %s: %w: %w", op, anarchon.ErrClosed, err))
	}
	b.reloadCluster(err)
	e := fmt.Errorf("redisbackend: %s: %w", op, err)
	if IsPermanent(err) {
		return anarchon.Permanent(e)
	}
	return e
}

func (b *Backend) unexpected(op string, res any) error {
	return fmt.Errorf("%w: %s: got %T", ErrUnexpectedReply, op, res)
}

// Sentinel errors of this package. Test for them with [errors.Is]. All
// but ErrNotReplicated are marked anarchon.Permanent: a retry cannot fix
// them.
var (
	// ErrInvalidInput is returned for arguments the backend refuses before
	// talking to Redis: an empty job name or token, a slot beyond ±MaxSlot, a
	// non-positive lease, a negative duration or history size; and by Init
	// for a Sentinel master name (master=) that no Sentinel knows.
	ErrInvalidInput = anarchon.Permanent(errors.New("redisbackend: invalid input"))
	// ErrNotReplicated is returned by a winning claim, a lease renewal or a
	// finish when Options.Replicas is set and fewer replicas acknowledged
	// it within ReplicaTimeout. The caller must not run the slot (fail
	// closed), nor count on the renewal: a failover could still forget it.
	// The backend withdraws such a claim from the primary (see
	// Backend.Claim and RunStore.Claim), so a repeat is judged as a new
	// claim; a finish is safe to repeat.
	ErrNotReplicated = errors.New("redisbackend: claim not acknowledged by enough replicas")
	// ErrUnexpectedReply is returned when Redis answers a script with a
	// reply of the wrong shape (a server that is not Redis-compatible, or
	// keys written by something else under the backend's prefix).
	ErrUnexpectedReply = anarchon.Permanent(errors.New("redisbackend: unexpected reply from redis"))
	// ErrServerTooOld is returned by Init when the server is older than
	// Redis 5, which lacks script effects replication (see the package doc).
	ErrServerTooOld = anarchon.Permanent(errors.New("redisbackend: redis server too old (need 5.0 or later)"))
	// ErrEvictionPolicy is returned by Init for a server whose
	// maxmemory-policy may evict keys (allkeys-* or volatile-*), unless
	// Options.AllowEviction is set: an evicted claim lets a slot run twice.
	ErrEvictionPolicy = anarchon.Permanent(errors.New("redisbackend: the server's maxmemory-policy may evict claims"))
	// ErrDataLost is returned by claims for Options.LossHold after the
	// backend found that the server lost its data (its sentinel key is
	// gone: FLUSHALL, FLUSHDB, a restart without persistence). It is
	// transient: claims succeed again after the hold.
	ErrDataLost = errors.New("redisbackend: the server lost its data; claims fail closed for a while")
	// ErrNoData is returned by Init with Options.MustExist when the
	// server holds no anarchon data under the prefix (its sentinel key
	// is missing): Init then wrote nothing.
	ErrNoData = anarchon.Permanent(errors.New("redisbackend: no anarchon data under this prefix"))
)

// clusterReloadEvery bounds how often a failing call reloads a cluster's
// slot map.
const clusterReloadEvery = 250 * time.Millisecond

// reloadCluster asks a cluster client to reload its slot map after an
// error that a failover causes: the network (a dead master refuses or
// times out), CLUSTERDOWN, TRYAGAIN, MASTERDOWN. go-redis reloads the map
// on MOVED and ASK, and otherwise only every ClusterStateReloadInterval
// (60 s by default): a client whose master died kept dialling it, and
// claims stopped for 24–40 s although the cluster had promoted a replica
// in 3–4.5 s (redis/go-redis#3979). The reload runs in the background,
// at most once per clusterReloadEvery.
func (b *Backend) reloadCluster(err error) {
	cc, ok := b.client.(*redis.ClusterClient)
	if !ok || !failoverError(err) {
		return
	}
	now := time.Now().UnixNano()
	last := b.lastReload.Load()
	if now-last < int64(clusterReloadEvery) || !b.lastReload.CompareAndSwap(last, now) {
		return
	}
	cc.ReloadState(context.Background())
}

// failoverError reports whether err is what a call meets while a master
// is dead or being replaced.
func failoverError(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) {
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		kind, _, _ := strings.Cut(re.Error(), " ")
		switch kind {
		case "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY":
			return true
		}
	}
	return false
}

// unknownMaster reports whether err is go-redis's failure to find the
// master because every Sentinel answered that it knows no master of that
// name (a nil reply each): errors joined under "all sentinels specified in
// configuration are unreachable". One Sentinel that could not be reached
// makes it false: that one may know the name.
func unknownMaster(err error) bool {
	errs, ok := sentinelErrs(err)
	if !ok {
		return false
	}
	for _, e := range errs {
		if !errors.Is(e, redis.Nil) {
			return false
		}
	}
	return len(errs) > 0
}

// sentinelErrs returns the errors go-redis joined, one per Sentinel, when
// it found no master; ok is false for any other error.
func sentinelErrs(err error) (errs []error, ok bool) {
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		return nil, false
	}
	return joined.Unwrap(), true
}
