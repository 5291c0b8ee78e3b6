package redisbackend

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/redis/go-redis/v9"
)

// DefaultPrefix is the key prefix used when [Options.Prefix] is empty.
const DefaultPrefix = "anarchon"

// DefaultReplicaTimeout is how long a claim waits for replicas when
// [Options.Replicas] is set and [Options.ReplicaTimeout] is zero.
const DefaultReplicaTimeout = time.Second

// MaxSlot is the largest slot magnitude (Unix ms) the backend accepts: 2^53,
// the largest integer Lua's numbers (IEEE doubles) hold exactly. It is about
// 285,000 years away from the epoch.
const MaxSlot = 1 << 53

// Options configure a [Backend]. A nil *Options means all defaults.
type Options struct {
	// Prefix starts every key and the pub/sub channel the backend uses, so
	// that several schedulers (or tests) can share one Redis. It must not
	// contain '{' or '}' (they would break the cluster hash tag) nor ':'
	// (which ends the prefix in every key, so that prefixes differing by a
	// ':' cannot share keys). Defaults to DefaultPrefix ("anarchon").
	Prefix string
	// Replicas, when > 0, makes every winning claim (plain and lease),
	// lease renewal and finish wait with WAIT until this many replicas have
	// acknowledged it. A call that falls short returns an error wrapping
	// ErrNotReplicated; a claim that does must not be run, and is withdrawn
	// from the primary. Defaults to 0: a claim counts
	// once the primary answers, and a failover can lose it (see the package
	// doc, "Replication and failover", for the topology to pair it with).
	Replicas int
	// ReplicaTimeout bounds the WAIT. It must be below the client's
	// ReadTimeout (5 s by default in go-redis v9.22), which bounds the
	// reply to the pipeline that carries the WAIT. Defaults to
	// DefaultReplicaTimeout (1 s).
	ReplicaTimeout time.Duration
	// AllowEviction lets Init accept a server whose maxmemory-policy may
	// evict keys (allkeys-* or volatile-*): an evicted claim is a slot
	// that runs twice, so Init refuses such a server with
	// ErrEvictionPolicy unless this is set, and then logs a warning.
	// Defaults to false.
	AllowEviction bool
	// LossHold is how long claims fail closed (ErrDataLost) after the
	// backend found that the server lost its data (see the package doc,
	// "Stores that forget"): long enough for the holders of runs claimed
	// before the loss to see their heartbeats fail and stop. Defaults to
	// DefaultLossHold (30 s).
	LossHold time.Duration
	// Logger receives the backend's warnings (eviction allowed,
	// persistence off) and its errors (data lost). Defaults to
	// slog.Default().
	Logger *slog.Logger
	// MustExist makes the backend a reader of an existing store, for
	// tools that only read (the daemon's history and status): Init
	// writes nothing (it neither loads its scripts nor creates the
	// sentinel key) and fails with ErrNoData when the sentinel key
	// "{<prefix>:}:epoch" is missing, that is when no instance ever
	// initialised this prefix on this server (a mistyped address,
	// database or prefix) or the server lost its data. A found loss is
	// then reported without writing the key again. Claims and other
	// writes are not refused. Defaults to false.
	MustExist bool
}

// DefaultLossHold is the default Options.LossHold.
const DefaultLossHold = 30 * time.Second

// Backend is the Redis store of anarchon. It implements [anarchon.Backend],
// [anarchon.LeaseBackend] (its [Backend.Runs] is a [*RunStore]),
// [anarchon.Watcher] and [anarchon.ServerClock]. It is safe for concurrent
// use. Create it with [New] or [Open].
type Backend struct {
	client   redis.UniversalClient
	owned    bool   // Close closes client
	master   string // the Sentinel master name of a redis+sentinel URL (Open); "" otherwise
	prefix   string
	channel  string
	replicas int
	waitFor  time.Duration
	runs     *RunStore

	closed atomic.Bool
	mu     sync.Mutex
	subs   map[*redis.PubSub]struct{}

	allowEviction bool
	mustExist     bool // Options.MustExist
	log           *slog.Logger
	lastReload    atomic.Int64 // Unix ns of the last cluster slot-map reload (errors.go)
	reported      atomic.Bool  // an Init succeeded: later ones do not log the start-up report again
	epoch         epochGuard   // the data-loss sentinel (durability.go)
}

var (
	_ anarchon.Backend        = (*Backend)(nil)
	_ anarchon.LeaseBackend   = (*Backend)(nil)
	_ anarchon.Watcher        = (*Backend)(nil)
	_ anarchon.ServerClock    = (*Backend)(nil)
	_ anarchon.RunStore       = (*RunStore)(nil)
	_ anarchon.ResultFinisher = (*RunStore)(nil)
	_ anarchon.Watcher        = (*RunStore)(nil)
	_ anarchon.ServerClock    = (*RunStore)(nil)
)

// New returns a backend on a client the caller owns: a *redis.Client
// (standalone or Sentinel failover) or a *redis.ClusterClient. Close does not
// close it. AUTH, TLS, timeouts and retries are the client's options.
// go-redis retries a command after a network error (MaxRetries); every
// script of this backend is safe to repeat, so that retry is harmless.
//
// It returns an error wrapping ErrInvalidInput for a nil client, a bad
// prefix, negative replica settings or a ReplicaTimeout not below the
// client's ReadTimeout. Options.Replicas needs a *redis.Client
// or *redis.ClusterClient (WAIT has to run on the connection that wrote).
func New(client redis.UniversalClient, opts *Options) (*Backend, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil redis client", ErrInvalidInput)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(o.Prefix, "{}:") {
		// ':' ends the prefix in every key ("{<prefix>:<job>}:run"): with
		// it inside, prefix "a" and job "b:c" would share the keys of
		// prefix "a:b" and job "c".
		return nil, fmt.Errorf("%w: prefix %q contains '{', '}' or ':'", ErrInvalidInput, o.Prefix)
	}
	if o.Replicas < 0 || o.ReplicaTimeout < 0 {
		return nil, fmt.Errorf("%w: negative Replicas or ReplicaTimeout", ErrInvalidInput)
	}
	if o.ReplicaTimeout == 0 {
		o.ReplicaTimeout = DefaultReplicaTimeout
	}
	if o.Replicas > 0 {
		read, ok := readTimeout(client)
		if !ok {
			return nil, fmt.Errorf("%w: Replicas needs a *redis.Client or *redis.ClusterClient, not %T", ErrInvalidInput, client)
		}
		if read > 0 && o.ReplicaTimeout >= read {
			return nil, fmt.Errorf("%w: ReplicaTimeout %v is not below the client's ReadTimeout %v", ErrInvalidInput, o.ReplicaTimeout, read)
		}
	}
	b := &Backend{
		client:   client,
		prefix:   o.Prefix,
		channel:  o.Prefix + ":runs",
		replicas: o.Replicas,
		waitFor:  o.ReplicaTimeout,
		subs:     make(map[*redis.PubSub]struct{}),

		allowEviction: o.AllowEviction,
		mustExist:     o.MustExist,
		log:           o.Logger,
	}
	if b.log == nil {
		b.log = slog.Default()
	}
	if o.LossHold < 0 {
		return nil, fmt.Errorf("%w: negative LossHold", ErrInvalidInput)
	}
	if o.LossHold == 0 {
		o.LossHold = DefaultLossHold
	}
	b.epoch.hold = o.LossHold
	b.runs = &RunStore{b: b}
	return b, nil
}

// readTimeout is the read timeout of a client WAIT can run on (false for
// other kinds): the WAIT must end before it.
func readTimeout(c redis.UniversalClient) (time.Duration, bool) {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().ReadTimeout, true
	case *redis.ClusterClient:
		return c.Options().ReadTimeout, true
	}
	return 0, false
}

// Open creates a client from a URL and returns a backend that owns it:
// Close closes it. The forms:
//
//	redis://[user:password@]host[:port][/db][?options]            one server (rediss:// for TLS)
//	redis+sentinel://[user:password@]s1[:port],s2,s3[/db]?master=NAME  Sentinel (rediss+sentinel:// for TLS)
//	redis://[user:password@]h1[:port],h2,h3?cluster=true              Redis Cluster (the hosts are seeds)
//
// Ports default to 6379 (26379 for Sentinels). The user and password are
// those of the Redis servers; with Sentinel, sentinel_username= and
// sentinel_password= give the Sentinels' own. The backend's parameters,
// which take precedence over opts: wait=N (Options.Replicas),
// wait_timeout=DURATION (Options.ReplicaTimeout, a Go duration such as
// 500ms), prefix=P (Options.Prefix). go-redis reads the rest as its client
// options (dial_timeout=, read_timeout=, pool_size=, …; see
// [redis.ParseURL], [redis.ParseFailoverURL], [redis.ParseClusterURL]) and
// refuses one it does not know.
//
// A URL it cannot use gives an error wrapping ErrInvalidInput: an unknown
// scheme, an empty or malformed host, a host list without cluster=true or
// Sentinel, a Sentinel URL without master=, a bad wait= or wait_timeout=,
// a wait_timeout= without wait= or not below the read timeout (read_timeout=),
// an unknown parameter. Errors never contain the password: the URL is shown
// redacted.
func Open(rawURL string, opts *Options) (*Backend, error) {
	p, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if p.replicas != nil {
		o.Replicas = *p.replicas
	}
	if p.timeout != nil {
		o.ReplicaTimeout = *p.timeout
	}
	if p.prefix != nil {
		o.Prefix = *p.prefix
	}
	client := p.client()
	if err := p.checkWait(rawURL, client, &o); err != nil {
		_ = client.Close()
		return nil, err
	}
	b, err := New(client, &o)
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	b.owned = true
	if p.failover != nil {
		b.master = p.failover.MasterName
	}
	return b, nil
}

// Name returns "redis".
func (b *Backend) Name() string { return "redis" }

// DedupeWindow returns anarchon.Forever: a claimed slot is never claimed
// again. Claims are trimmed with the job's history, and a per-job watermark
// (the newest slot trimmed) makes any claim at or below it lose, so trimming
// never reopens a slot (SPEC §4). See "Memory" in the package doc.
func (b *Backend) DedupeWindow() time.Duration { return anarchon.Forever }

// Client returns the go-redis client the backend uses.
func (b *Backend) Client() redis.UniversalClient { return b.client }

// Runs returns the backend's lease store (SPEC §6).
func (b *Backend) Runs() anarchon.RunStore { return b.runs }

// Init checks that the server answers and is Redis 5 or later, and loads the
// scripts into its script cache (every master of a cluster). It logs the
// replication topology (replicas connected, min-replicas-to-write, the
// WAIT setting) at INFO, and a WARN naming the risk when a failover can
// lose acknowledged claims (replicas or Sentinel/Cluster without
// Options.Replicas) or one lost node stops every claim (see the package
// doc, "Replication and failover"). It is safe to call more than once and
// concurrently; once an Init has succeeded, later ones check the server
// again (and fail as the first would) but log none of this.
func (b *Backend) Init(ctx context.Context) error {
	if err := b.check(); err != nil {
		return err
	}
	if err := b.client.Ping(ctx).Err(); err != nil {
		if b.master != "" && unknownMaster(err) {
			// go-redis says "all sentinels … are unreachable" when every
			// one answered that it monitors no such master.
			return fmt.Errorf("%w: init: no Sentinel knows a master named %q (master=): it must be the name in their `sentinel monitor` lines", ErrInvalidInput, b.master)
		}
		return b.wrap("init: ping", err)
	}
	info, err := b.client.Info(ctx, "server").Result()
	if err != nil {
		return b.wrap("init: info", err)
	}
	if v, ok := infoField(info, "redis_version"); ok {
		major, _, _ := strings.Cut(v, ".")
		if n, err := strconv.Atoi(major); err == nil && n < 5 {
			return fmt.Errorf("%w: server reports redis_version %s", ErrServerTooOld, v)
		}
	}
	if !b.mustExist {
		for _, s := range allScripts {
			for ; s != nil; s = s.batch {
				if err := s.Load(ctx, b.client).Err(); err != nil {
					return b.wrap("init: script load", err)
				}
			}
		}
	}
	// The report is logged until an Init succeeds: the scheduler calls
	// Init again before the reads of a scheduler that was not started
	// (a second one on the same backend, a read-only tool), and the same
	// report each time would only repeat itself.
	log := b.log
	if b.reported.Load() {
		log = slog.New(slog.DiscardHandler)
	}
	persistence, err := b.checkDurability(ctx, log)
	if err != nil {
		return err
	}
	b.checkTopology(ctx, persistence, log)
	if err := b.epoch.init(ctx, b); err != nil {
		return err
	}
	b.reported.Store(true)
	return nil
}

func infoField(info, name string) (string, bool) {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v, true
		}
	}
	return "", false
}

// ServerTime reads the server's clock with TIME (SPEC §6).
func (b *Backend) ServerTime(ctx context.Context) (time.Time, error) {
	if err := b.check(); err != nil {
		return time.Time{}, err
	}
	t, err := b.client.Time(ctx).Result()
	if err != nil {
		return time.Time{}, b.wrap("server time", err)
	}
	return t, nil
}

// Close ends the backend's watches and, if the backend was made by [Open],
// closes its client. Later calls return errors wrapping anarchon.ErrClosed.
// Closing twice is not an error.
func (b *Backend) Close(ctx context.Context) error {
	if b.closed.Swap(true) {
		return nil
	}
	b.mu.Lock()
	subs := b.subs
	b.subs = nil
	b.mu.Unlock()
	for ps := range subs {
		_ = ps.Close()
	}
	if b.owned {
		if err := b.client.Close(); err != nil {
			return b.wrap("close", err)
		}
	}
	return nil
}

// check returns ErrClosed after Close.
func (b *Backend) check() error {
	if b.closed.Load() {
		return anarchon.Permanent(fmt.Errorf("redisbackend: %w", anarchon.ErrClosed))
	}
	return nil
}

func (b *Backend) checkRun(job string, slot int64, token string) error {
	if err := b.check(); err != nil {
		return err
	}
	if job == "" {
		return fmt.Errorf("%w: empty job name", ErrInvalidInput)
	}
	if token == "" {
		return fmt.Errorf("%w: job %q: empty token", ErrInvalidInput, job)
	}
	return checkSlot(slot)
}

func checkSlot(slot int64) error {
	if slot > MaxSlot || slot < -MaxSlot {
		return fmt.Errorf("%w: slot %d outside ±2^53 ms", ErrInvalidInput, slot)
	}
	return nil
}

func slotArg(slot int64) string { return strconv.FormatInt(slot, 10) }

// jobKeys are the keys of one job. They share the hash tag {prefix:job}, so
// they live in one cluster slot and one script may touch them all.
type jobKeys struct {
	run     string // HASH slot -> run state (JSON); field "mark": the newest slot forgotten by trimming
	claims  string // HASH token -> claim record (JSON)
	hist    string // ZSET "slot/token" (or "slot/") scored by slot; a plain claim enters with its result
	results string // HASH history member -> stored result (JSON)
	active  string // ZSET slots that are running or released, scored by slot
	age     string // ZSET history members with a result, scored by the server time it was saved (ms)
	ctl     string // STRING the job's control state (JSON, control.go), read by the claim scripts
	trig    string // HASH trigger key -> trigger record (JSON, control.go)
	fence   string // STRING the last fencing token a won lease claim took (INCR)
}

// keySuffixes are the suffixes of a job's keys after its tag, in the
// order of jobKeys's fields.
var keySuffixes = [...]string{":run", ":claims", ":hist", ":results", ":active", ":age", ":ctl", ":trig", ":fence"}

// keys returns job's keys. They are cut from one string (tag, suffix, tag,
// suffix, ...) so that a job's keys cost one allocation, not one each: a
// burst builds them for every claim, result and finish.
func (b *Backend) keys(job string) jobKeys {
	tag := b.tag(job)
	n := 0
	for _, s := range keySuffixes {
		n += len(tag) + len(s)
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, s := range keySuffixes {
		sb.WriteString(tag)
		sb.WriteString(s)
	}
	all := sb.String()
	var k [len(keySuffixes)]string
	at := 0
	for i, s := range keySuffixes {
		k[i] = all[at : at+len(tag)+len(s)]
		at += len(tag) + len(s)
	}
	return jobKeys{run: k[0], claims: k[1], hist: k[2], results: k[3], active: k[4], age: k[5], ctl: k[6], trig: k[7], fence: k[8]}
}

// tag is the hash tag that starts every key of job.
func (b *Backend) tag(job string) string {
	return "{" + b.prefix + ":" + escapeJob(job) + "}"
}

// finishKeys is the key layout of scriptFinish and scriptFinishResult.
func (k jobKeys) finishKeys() []string {
	return []string{k.run, k.claims, k.hist, k.results, k.age, k.active}
}

// escapeJob keeps a job name from ending the hash tag early: '%', '{' and
// '}' are percent-encoded, so distinct names give distinct keys.
func escapeJob(job string) string {
	if !strings.ContainsAny(job, "%{}") {
		return job
	}
	r := strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D")
	return r.Replace(job)
}
