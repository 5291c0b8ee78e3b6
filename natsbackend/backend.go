package natsbackend

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of [Options].
const (
	// DefaultBucket is the KV bucket that holds claims, runs and per-job
	// keys.
	DefaultBucket = "anarchon"
	// DefaultHistoryStream is the stream that holds claim and result records.
	DefaultHistoryStream = "ANARCHON_HISTORY"
	// DefaultHistorySubject is the subject prefix of the history stream.
	DefaultHistorySubject = "anarchon.history"
	// DefaultClaimTTL is how long the KV bucket keeps a claim (its MaxAge),
	// and so the backend's DedupeWindow: 7 days.
	DefaultClaimTTL = 7 * 24 * time.Hour
	// DefaultTimeout bounds one call of the backend (see
	// [Options.Timeout]).
	DefaultTimeout = 10 * time.Second
)

// Options configure a [Backend]. A nil *Options, and each zero field, means
// the default stated on the field.
type Options struct {
	// Bucket is the name of the KV bucket holding claims (keys
	// "c.<job>.<slot>"), lease runs ("r.<job>.<slot>") and per-job keys
	// ("j.<job>"). Defaults to DefaultBucket ("anarchon"). Every instance
	// of an application must use the same bucket.
	Bucket string
	// HistoryStream is the name of the stream holding history records.
	// Defaults to DefaultHistoryStream ("ANARCHON_HISTORY").
	HistoryStream string
	// HistorySubject is the subject prefix the history stream captures
	// ("<prefix>.>"); a job's records, claims and results alike (each
	// record says which it is), are published to "<prefix>.<job>", the
	// job's name encoded as in the bucket's keys (package doc, "Storage").
	// Defaults to DefaultHistorySubject ("anarchon.history").
	HistorySubject string
	// ClaimTTL is the KV bucket's TTL (stream MaxAge): how long a claim,
	// a run and its state are kept after their last write. It is the
	// backend's DedupeWindow. anarchon.Forever keeps claims for good (the
	// bucket then grows by one key per slot). Defaults to DefaultClaimTTL
	// (7 days). Values below one second are refused by New.
	ClaimTTL time.Duration
	// Replicas is the number of replicas of the bucket and the stream when
	// this backend creates them: 1 to 5, or AutoReplicas (3 on a cluster of
	// three or more servers, else 1). Init does not change the replicas of
	// a bucket or stream that exists: it logs a WARN when they differ from
	// Replicas, and when the bucket has one replica on a cluster (see
	// "Guarantees" and [Backend.Topology]). Defaults to 1.
	Replicas int
	// MemoryStorage creates the bucket and the stream in memory instead
	// of on disk. A server restart then forgets every claim. Defaults to
	// false (file storage).
	MemoryStorage bool
	// Timeout bounds each call of the backend (a claim, a heartbeat, a
	// finish: the few round trips it makes), inside the caller's deadline
	// when that is earlier. A server that stops answering without closing
	// the connection (a frozen node, a network partition) then fails the
	// call after Timeout, so the scheduler fails closed instead of waiting
	// for its own 30 s bound while the slot goes late. Within Timeout, a
	// claim's requests that nobody answered because a stream of the
	// backend lost its leader are sent again when the server announces
	// the new one (see "Guarantees", Timeouts). History reads are
	// bounded by the caller's deadline if it has one, else by Timeout.
	// Defaults to DefaultTimeout (10 s).
	Timeout time.Duration
	// Logger receives the ERROR logged when the bucket or the stream was
	// found gone and created again. Defaults to slog.Default().
	Logger *slog.Logger
	// MustExist makes the backend a reader of an existing store, for
	// tools that only read (the daemon's history and status): it never
	// creates the bucket or the stream, and Init (like every other call)
	// fails with ErrNoData when either is missing, that is when no
	// instance ever initialised this bucket on this server (a mistyped
	// address or bucket) or the server lost it. Writes into an existing
	// bucket are not refused. Defaults to false.
	MustExist bool
}

func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Bucket == "" {
		r.Bucket = DefaultBucket
	}
	if r.HistoryStream == "" {
		r.HistoryStream = DefaultHistoryStream
	}
	if r.HistorySubject == "" {
		r.HistorySubject = DefaultHistorySubject
	}
	if r.ClaimTTL == 0 {
		r.ClaimTTL = DefaultClaimTTL
	}
	if r.Replicas == 0 {
		r.Replicas = 1
	}
	if r.Timeout == 0 {
		r.Timeout = DefaultTimeout
	}
	switch {
	case r.ClaimTTL < time.Second:
		return r, fmt.Errorf("%w: ClaimTTL %v is below one second", ErrInvalid, r.ClaimTTL)
	case (r.Replicas < 0 && r.Replicas != AutoReplicas) || r.Replicas > 5:
		return r, fmt.Errorf("%w: Replicas %d is outside 1..5 (or AutoReplicas)", ErrInvalid, r.Replicas)
	case r.Timeout < 0:
		return r, fmt.Errorf("%w: Timeout %v is negative", ErrInvalid, r.Timeout)
	case strings.ContainsAny(r.Bucket, " .*>\t\r\n"):
		return r, fmt.Errorf("%w: Bucket %q: a bucket name may hold only letters, digits, '-' and '_'", ErrInvalid, r.Bucket)
	case strings.ContainsAny(r.HistoryStream, " .*>\t\r\n"):
		return r, fmt.Errorf("%w: HistoryStream %q: a stream name may not hold spaces, '.', '*' or '>'", ErrInvalid, r.HistoryStream)
	case strings.ContainsAny(r.HistorySubject, " *>\t\r\n") || strings.HasPrefix(r.HistorySubject, ".") || strings.HasSuffix(r.HistorySubject, "."):
		return r, fmt.Errorf("%w: HistorySubject %q is not a literal subject", ErrInvalid, r.HistorySubject)
	}
	return r, nil
}

// Backend is the NATS JetStream backend. It implements anarchon.Backend,
// anarchon.ClaimRecorder, anarchon.JobChecker, anarchon.LeaseBackend (see
// [RunStore]), anarchon.Watcher and anarchon.ServerClock. It is safe for concurrent use.
type Backend struct {
	opts Options
	js   jetstream.JetStream
	nc   *nats.Conn // closed by Close only when owned
	own  bool

	infoMu sync.Mutex  // serializes Info calls on the history stream handle
	clk    serverClock // cached server clock; see clock.go
	mu     sync.Mutex
	kv     jetstream.KeyValue
	hist   jetstream.Stream
	closed bool

	// rebind is set by wrap when a call met a missing bucket or stream, or
	// no responders: the next call binds again (creating what is gone)
	// instead of failing forever on stale handles.
	rebind   atomic.Bool
	binding  bool        // a call is binding again (see ready); guarded by mu
	elect    elections   // leader elections of the bucket's and the history stream; see resend.go
	elected  atomic.Bool // the bucket has more than one replica: a lost leader is replaced by an election
	wasBound bool        // bound once: creating the bucket or stream again means a loss
	topo     Topology    // what the first bind found; guarded by mu

	// dialErr is the last failed connection attempt's error, kept by the
	// ReconnectErrHandler that Open installs (it stays empty for
	// NewJetStream and New): nats.go clears the connection's LastError
	// when it starts a new attempt, so Init would otherwise report no
	// cause for most of a retry's wait.
	dialErr *atomic.Pointer[error]
}

var (
	_ anarchon.Backend       = (*Backend)(nil)
	_ anarchon.ClaimRecorder = (*Backend)(nil)
	_ anarchon.JobChecker    = (*Backend)(nil)
	_ anarchon.LeaseBackend  = (*Backend)(nil)
	_ anarchon.Watcher       = (*Backend)(nil)
	_ anarchon.ServerClock   = (*Backend)(nil)
)

// asyncAckTimeout is how long the JetStream context of New and Open keeps
// waiting for the acknowledgement of an asynchronous publish. A publish
// that a dying leader dropped is never acknowledged; without a timeout it
// would stay among the context's pending publishes for good, and at 4,000
// of them (nats.go's default) publishing stalls. The backend's calls give
// up on an acknowledgement much sooner (Options.Timeout).
const asyncAckTimeout = time.Minute

// asyncMaxPending is how many asynchronous publishes the JetStream
// context of New and Open lets wait for their acknowledgements before a
// further publish stalls (and then fails with "too many outstanding
// async published messages"). nats.go's default, 4,000, is below one
// burst: 10,000 slots due at once are claimed in batches whose creates
// are all published before any acknowledgement is awaited, and claims
// failed on it. A pending publish costs its message and a future.
const asyncMaxPending = 65536

// New returns a Backend on the caller's connection. Close does not close
// nc. The bucket and the stream are created (or bound) by Init. It returns
// an error wrapping ErrInvalid for a nil connection or bad options.
func New(nc *nats.Conn, opts *Options) (*Backend, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: nil *nats.Conn", ErrInvalid)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(asyncAckTimeout), jetstream.WithPublishAsyncMaxPending(asyncMaxPending))
	if err != nil {
		return nil, fmt.Errorf("natsbackend: %w", err)
	}
	return newBackend(js, nil, false, opts)
}

// NewJetStream returns a Backend on the caller's JetStream context (which
// may carry a domain or API prefix). Close does not close its connection.
// It returns an error wrapping ErrInvalid for a nil js or bad options.
func NewJetStream(js jetstream.JetStream, opts *Options) (*Backend, error) {
	if js == nil {
		return nil, fmt.Errorf("%w: nil jetstream.JetStream", ErrInvalid)
	}
	return newBackend(js, nil, false, opts)
}

// Open connects to url (e.g. "nats://127.0.0.1:4222", a comma-separated
// list for a cluster) with natsOpts and returns a Backend that owns the
// connection: Close closes it. Connection errors are returned with the
// nats.go error reachable through errors.Is; the URL's credentials never
// appear in them. A port that accepts the connection but never greets it
// as a NATS server does (a monitoring port) is named as such in the error.
func Open(url string, opts *Options, natsOpts ...nats.Option) (*Backend, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	// The handler comes first: one in natsOpts replaces it (Init then
	// names only the connection's LastError).
	dialErr := new(atomic.Pointer[error])
	natsOpts = append([]nats.Option{nats.Name("anarchon"), nats.Timeout(o.Timeout),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				dialErr.Store(&err)
			}
		})}, natsOpts...)
	nc, err := nats.Connect(url, natsOpts...)
	if err != nil {
		if silentPort(err) {
			err = fmt.Errorf("%w: %s", err, silentPortHint)
		}
		return nil, fmt.Errorf("natsbackend: connect to %s: %w", redactURL(url), err)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(asyncAckTimeout), jetstream.WithPublishAsyncMaxPending(asyncMaxPending))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("natsbackend: %w", err)
	}
	b, err := newBackend(js, nc, true, opts)
	if err != nil {
		nc.Close()
		return nil, err
	}
	b.dialErr = dialErr
	return b, nil
}

func newBackend(js jetstream.JetStream, nc *nats.Conn, own bool, opts *Options) (*Backend, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Backend{opts: o, js: js, nc: nc, own: own, dialErr: new(atomic.Pointer[error])}, nil
}

// redactURL drops user info from every URL of a comma-separated list.
func redactURL(url string) string {
	parts := strings.Split(url, ",")
	for i, p := range parts {
		if at := strings.LastIndex(p, "@"); at >= 0 {
			scheme := ""
			if j := strings.Index(p, "://"); j >= 0 && j < at {
				scheme = p[:j+3]
			}
			parts[i] = scheme + "***@" + p[at+1:]
		}
	}
	return strings.Join(parts, ",")
}

// Name returns "nats".
func (b *Backend) Name() string { return "nats" }

// DedupeWindow returns Options.ClaimTTL: the bucket's MaxAge, after which
// JetStream drops a claim that was not written since (anarchon.Forever if
// ClaimTTL is Forever). See the package docs, "Dedupe window".
func (b *Backend) DedupeWindow() time.Duration { return b.opts.ClaimTTL }

// Runs returns the backend's lease store, a *[RunStore].
func (b *Backend) Runs() anarchon.RunStore { return &RunStore{b} }

// CheckJob refuses a job whose lease is not shorter than the claim TTL
// (a run's key would age out of the bucket while it is held). The
// scheduler itself checks Jitter+MaxLate and the catch-up window against
// DedupeWindow (SPEC §4, §5).
func (b *Backend) CheckJob(l anarchon.JobLimits) error {
	if b.opts.ClaimTTL != anarchon.Forever && l.Lease >= b.opts.ClaimTTL {
		return fmt.Errorf("%w: lease %v is not below the bucket TTL %v", ErrInvalid, l.Lease, b.opts.ClaimTTL)
	}
	if _, err := encodeJob(l.Job); err != nil {
		return err
	}
	return nil
}

// Init creates the KV bucket and the history stream, or binds to them if
// another instance created them. It is safe to call more than once and
// concurrently. It returns an error wrapping ErrBucketMismatch if the
// bucket exists with a shorter TTL than Options.ClaimTTL, and
// anarchon.ErrClosed after Close. Server errors keep the jetstream error
// reachable (e.g. jetstream.ErrJetStreamNotEnabled).
//
// On a connection that is not connected yet (one opened with
// nats.RetryOnFailedConnect while no server answers) Init fails at once
// with a transient error naming the connection's last error, rather than
// waiting out its timeout; the caller may call it again. A port that
// accepts the connection but never greets it as a NATS server does (a
// monitoring or HTTP port: the attempt ends in a read timeout) is named
// as such in that error.
func (b *Backend) Init(ctx context.Context) error {
	if nc := b.js.Conn(); nc != nil && !nc.IsConnected() && !nc.IsClosed() {
		return fmt.Errorf("natsbackend: init: not connected to a server (%s)", notConnected(nc.LastError(), b.dialErr.Load()))
	}
	_, err := b.ready(ctx)
	return err
}

// notConnected says why a connection is not up: its own last error, else
// the last failed attempt's, with a hint for a read timeout (the server
// accepted the TCP connection and sent no INFO line, which a NATS server
// sends first: nats.go's "read tcp …: i/o timeout").
func notConnected(last error, dial *error) string {
	if last == nil && dial != nil {
		last = *dial
	}
	if last == nil {
		return "no server answered yet: the first connection attempt is still under way"
	}
	if silentPort(last) {
		return last.Error() + ": " + silentPortHint
	}
	return last.Error()
}

const silentPortHint = "the port accepted the connection but sent no NATS greeting; is it the server's client port (4222 by default), not its monitoring, cluster or HTTP port?"

// silentPort reports whether err is nats.go's read timeout waiting for
// the server's INFO line on a connection the port accepted.
func silentPort(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "read" && oe.Timeout()
}

type handles struct {
	kv   jetstream.KeyValue
	hist jetstream.Stream
}

func (b *Backend) ready(ctx context.Context) (handles, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return handles{}, anarchon.Permanent(fmt.Errorf("natsbackend: %w", anarchon.ErrClosed))
	}
	if b.kv == nil {
		// The first bind: no call can go on without handles, so they wait
		// for it under the lock.
		return b.bindLocked(ctx)
	}
	h := handles{b.kv, b.hist}
	if b.binding || !b.rebind.Swap(false) {
		return h, nil
	}
	// Bind again, without holding the lock: every other call goes on
	// with the handles it has meanwhile. A stream whose leader is being
	// elected answers no one (no responders, then requests time out until
	// a follower calls the election, 4–9 s after the last heartbeat), so a
	// bind that held the lock would queue every claim, heartbeat and
	// finish of this backend behind its Options.Timeout, one after the
	// other, well past the election. The handles stay valid while the
	// bucket and stream exist; only a bucket or stream that is gone needs
	// the new ones.
	b.binding = true
	b.mu.Unlock()
	if rebindHook != nil {
		rebindHook()
	}
	h, err := b.bind(ctx)
	b.mu.Lock()
	b.binding = false
	if err != nil {
		b.rebind.Store(true)
		return handles{}, err
	}
	if b.closed {
		return handles{}, anarchon.Permanent(fmt.Errorf("natsbackend: %w", anarchon.ErrClosed))
	}
	b.kv, b.hist = h.kv, h.hist
	return h, nil
}

// rebindHook, set by tests only, is called as a rebind begins.
var rebindHook func()

// bindLocked makes the first bind, with b.mu held.
func (b *Backend) bindLocked(ctx context.Context) (handles, error) {
	h, err := b.bind(ctx)
	if err != nil {
		b.rebind.Store(true)
		return handles{}, err
	}
	b.kv, b.hist = h.kv, h.hist
	return h, nil
}

// bind binds the bucket and the stream (creating what is missing) within
// Options.Timeout, the first bind within DefaultTimeout at least: creating
// a replicated bucket on a cluster that has just formed can take longer
// than a claim may, and a process that fails its first bind does not
// start. wasBound and topo are written by the first bind only, with b.mu
// held; a rebind reads wasBound, which is true by then.
func (b *Backend) bind(ctx context.Context) (handles, error) {
	limit := b.opts.Timeout
	if !b.wasBound {
		limit = max(limit, DefaultTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	kv, made, err := b.bindBucket(ctx)
	if err != nil {
		return handles{}, err
	}
	hist, madeHist, err := b.bindHistory(ctx)
	if err != nil {
		return handles{}, err
	}
	if b.wasBound && (made || madeHist) {
		// The bucket or stream this backend used is gone (deleted, or the
		// server lost its JetStream directory) and was created again,
		// empty: claims and leases of running slots are forgotten.
		b.logger().LogAttrs(ctx, slog.LevelError, "nats: the store lost its data and was created again, empty: every claim, lease and history record before is forgotten; a slot running now may run again (Run.Attempt cannot fence it)",
			slog.String("bucket", b.opts.Bucket), slog.Bool("bucket_created", made),
			slog.String("stream", b.opts.HistoryStream), slog.Bool("stream_created", madeHist))
	}
	if !b.wasBound {
		b.elect.watch(b.js.Conn(), "KV_"+b.opts.Bucket, b.opts.HistoryStream)
		b.topo = b.readTopology(ctx, kv, hist)
		b.elected.Store(b.topo.BucketReplicas > 1)
		b.reportTopology(ctx, b.topo)
		b.wasBound = true
	}
	return handles{kv, hist}, nil
}

func (b *Backend) logger() *slog.Logger {
	if b.opts.Logger != nil {
		return b.opts.Logger
	}
	return slog.Default()
}

func (b *Backend) storage() jetstream.StorageType {
	if b.opts.MemoryStorage {
		return jetstream.MemoryStorage
	}
	return jetstream.FileStorage
}

func (b *Backend) bindBucket(ctx context.Context) (kv jetstream.KeyValue, made bool, err error) {
	kv, err = b.js.KeyValue(ctx, b.opts.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) && b.opts.MustExist {
		return nil, false, fmt.Errorf("%w: bucket %s does not exist", ErrNoData, b.opts.Bucket)
	}
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		made = true
		ttl := b.opts.ClaimTTL
		if ttl == anarchon.Forever {
			ttl = 0
		}
		kv, err = b.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      b.opts.Bucket,
			Description: "anarchon claims and leases",
			History:     1,
			TTL:         ttl,
			Storage:     b.storage(),
			Replicas:    b.replicas(),
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			made = false
			kv, err = b.js.KeyValue(ctx, b.opts.Bucket)
		}
	}
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			// The JetStream API has no subscriber: a server started
			// without -js, or an account without JetStream.
			err = fmt.Errorf("%w (no JetStream answered: is JetStream enabled on the server, nats-server -js, and for this account?)", err)
		}
		return nil, false, b.wrap("bind bucket "+b.opts.Bucket, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, false, b.wrap("read bucket status", err)
	}
	if have := st.TTL(); have > 0 && (b.opts.ClaimTTL == anarchon.Forever || have < b.opts.ClaimTTL) {
		return nil, false, fmt.Errorf("%w: bucket %s has TTL %v, ClaimTTL is %v", ErrBucketMismatch, b.opts.Bucket, have, b.opts.ClaimTTL)
	}
	return kv, made, nil
}

func (b *Backend) bindHistory(ctx context.Context) (s jetstream.Stream, made bool, err error) {
	s, err = b.js.Stream(ctx, b.opts.HistoryStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) && b.opts.MustExist {
		return nil, false, fmt.Errorf("%w: stream %s does not exist", ErrNoData, b.opts.HistoryStream)
	}
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		made = true
		s, err = b.js.CreateStream(ctx, jetstream.StreamConfig{
			Name:        b.opts.HistoryStream,
			Description: "anarchon run history",
			Subjects:    []string{b.opts.HistorySubject + ".>"},
			Storage:     b.storage(),
			Replicas:    b.replicas(),
			Discard:     jetstream.DiscardOld,
			Duplicates:  2 * time.Minute,
			AllowDirect: true,
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			made = false
			s, err = b.js.Stream(ctx, b.opts.HistoryStream)
		}
	}
	if err != nil {
		return nil, false, b.wrap("bind stream "+b.opts.HistoryStream, err)
	}
	return s, made, nil
}

// Close marks the backend closed and, if it was made by Open, closes its
// connection. Later calls return errors wrapping anarchon.ErrClosed. Close
// is idempotent.
func (b *Backend) Close(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	b.elect.stop()
	if b.own && b.nc != nil {
		b.nc.Close()
	}
	return nil
}

// bound limits one call to Options.Timeout, inside the caller's deadline
// when it has an earlier one. The scheduler gives its store calls a 30 s
// deadline; a server that stops answering without closing the connection
// (a frozen or partitioned node) must fail a claim after Timeout, not hold
// it for the whole 30 s while its slot goes late.
func (b *Backend) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, b.opts.Timeout)
}

// boundLong adds Options.Timeout to a context without a deadline only: a
// History read may page through many messages, and a caller that set a
// longer deadline for it means it.
func (b *Backend) boundLong(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, b.opts.Timeout)
}

// encodeJob returns the job name as a NATS subject token: unpadded
// base64url (RFC 4648 §5) of its UTF-8 bytes, so that dots, spaces,
// wildcards, quotes and any Unicode round-trip.
func encodeJob(job string) (string, error) {
	if job == "" {
		return "", fmt.Errorf("%w: empty job name", ErrInvalid)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(job)), nil
}

func decodeJob(tok string) (string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", false
	}
	return string(raw), true
}

func claimKey(job string, slot int64) string { return "c." + job + "." + strconv.FormatInt(slot, 10) }
func runKey(job string, slot int64) string   { return "r." + job + "." + strconv.FormatInt(slot, 10) }
func jobKey(job string) string               { return "j." + job }

func checkToken(token string) error {
	if token == "" {
		return fmt.Errorf("%w: empty token", ErrInvalid)
	}
	return nil
}
