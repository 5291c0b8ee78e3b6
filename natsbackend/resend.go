package natsbackend

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A clustered stream is served by its leader alone: only the leader
// subscribes to the stream's subjects and answers its info requests.
// When the leader dies or freezes, nothing answers until a follower's
// election timer fires (nats-server: 4–9 s after the leader's last
// heartbeat, not configurable) and the follower wins the vote. A request
// sent meanwhile meets no responders (a dead leader) or no answer at all
// (a frozen one, or followers that still believe in it), and a request
// that was sent before the election is not answered by the new leader
// either: it was dropped. So a claim that straddles the election fails
// after Options.Timeout although the store could have answered it
// shortly after the election, and its slot is lost.
//
// The backend therefore watches the server's advisories that a stream of
// its own (the bucket's or the history stream) elected a leader, and
// sends the requests of the claim paths again when one comes during the
// request, and after a short pause when nobody subscribed; always within
// the call's deadline. Only requests that are safe to send twice are
// sent again: reads (keys, and the server clock, a stream info request),
// creates and compare-and-set updates (a plain claim's Create, the
// batches' publishes: publishAll), whose second copy fails as a revision
// mismatch and then reads the caller's own token (SPEC §4, repeat
// safety), and history records, whose second copy the stream drops (their
// message IDs).

// resendPoll is how long a request that found no server subscribed waits
// before it is sent again when no election is announced sooner.
const resendPoll = 250 * time.Millisecond

// leaderElectedPrefix is the subject prefix of nats-server's advisory that
// a stream elected a leader; the stream's name follows.
const leaderElectedPrefix = "$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED."

// elections tells requests in flight that a stream of the backend has a
// new leader: each advisory ends the current generation's context.
type elections struct {
	mu     sync.Mutex
	gen    context.Context
	end    context.CancelFunc
	subs   []*nats.Subscription
	closed bool
}

// current returns the context that the next election ends.
func (e *elections) current() context.Context {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gen == nil {
		e.gen, e.end = context.WithCancel(context.Background())
	}
	return e.gen
}

// elected ends the current generation: requests in flight are sent again.
func (e *elections) elected() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.end != nil {
		e.end()
	}
	e.gen, e.end = context.WithCancel(context.Background())
}

// watch subscribes to the leader-elected advisories of streams on nc. A
// connection without the permission to subscribe to them only loses the
// early re-send on an election.
func (e *elections) watch(nc *nats.Conn, streams ...string) {
	if nc == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || len(e.subs) > 0 {
		return
	}
	for _, s := range streams {
		sub, err := nc.Subscribe(leaderElectedPrefix+s, func(*nats.Msg) { e.elected() })
		if err == nil {
			e.subs = append(e.subs, sub)
		}
	}
}

// stop unsubscribes.
func (e *elections) stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	for _, s := range e.subs {
		_ = s.Unsubscribe()
	}
	e.subs = nil
}

// noResponders reports whether no server subscribed to a request's
// subject: a stream without a leader (or a stream that is gone).
func noResponders(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// unavailable reports JetStream's "system temporarily unavailable" (API
// error 10008): the cluster's meta leader is being elected, and the
// request was not carried out.
func unavailable(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.ErrorCode(nats.JSErrCodeJetStreamNotAvailable)
}

// resend makes the request f (one round trip, safe to repeat) until it
// is answered or ctx ends: it cancels and repeats f when one of the
// backend's streams elects a leader while f waits, and, when the bucket
// has replicas to elect a leader from, repeats f after resendPoll (or at
// the next election) when no server subscribed. Any
// answer, error or not, is returned as it is; so is f's last error when
// ctx ends.
func (b *Backend) resend(ctx context.Context, f func(context.Context) error) error {
	return b.send(ctx, true, 0, f)
}

// resendRead is resend for a read, whose every try is also cut off after
// readTry: a direct get is served by any replica of the stream, a frozen
// one too, which keeps its subscription (until the cluster gives up on it,
// minutes later) and answers nothing, and no election may come to end the
// wait. A read sent again goes to another replica as likely as not; a
// direct get is also hedged within each try (hedged).
func (b *Backend) resendRead(ctx context.Context, f func(context.Context) error) error {
	return b.send(ctx, true, b.readTry(), f)
}

// readTry is how long one try of a read waits: a quarter of
// Options.Timeout, at least resendPoll.
func (b *Backend) readTry() time.Duration { return max(b.opts.Timeout/4, resendPoll) }

// hedgeCopies bounds the copies of one direct get that a try sends
// (hedged): the first and up to two more.
const hedgeCopies = 3

// hedgeAfter is how long a direct get waits for its answer before hedged
// sends another copy: a fifth of readTry, at least 2 × resendPoll (500 ms
// with the default Timeout). A healthy server answers in about a
// millisecond, so the copy is only sent where one would wait for readTry:
// in the bursts of 10,000 slots of bench/HISTORY.md §8 the server received as many
// messages per burst after the hedge as before it (60,434 against 60,436
// plain, 89,279 against 89,566 lease), so no copy went out there.
func (b *Backend) hedgeAfter() time.Duration { return max(b.readTry()/5, 2*resendPoll) }

// hedged makes the direct get f and, while it is unanswered, sends
// another copy every hedgeAfter (at most hedgeCopies in all), each with
// its own reply subject, and returns the first copy's answer to come
// back, error or not; ctx's end ends every copy. A direct get goes to one
// member, at random, of the queue group that every replica of the stream
// joins, a member whose server is frozen (SIGSTOP, a stalled VM) too: the
// cluster keeps it in the group until its route is found dead, minutes
// later, and it answers nothing. Measured on a cluster of three with the
// bucket's leader frozen, about one direct get in three went to it, before
// and after the election of a new leader alike; a read that waited
// readTry for each such copy once took a whole Timeout (four tries), and
// a leased run's finish then came after its lease. A copy goes to a member
// picked again, so three copies all meet the frozen one about once in 27
// tries. Only reads may be given: a copy has no effect but its answer.
func hedged[T any](ctx context.Context, after time.Duration, f func(context.Context) (T, error)) (T, error) {
	type answer struct {
		v   T
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answers := make(chan answer, hedgeCopies) // copies never block after the return
	send := func() {
		go func() {
			v, err := f(ctx)
			answers <- answer{v, err}
		}()
	}
	send()
	sent := 1
	timer := time.NewTimer(after)
	defer timer.Stop()
	for {
		select {
		case a := <-answers:
			return a.v, a.err
		case <-timer.C:
			if sent < hedgeCopies {
				send()
				sent++
				timer.Reset(after)
			}
		}
	}
}

// resendOnElection repeats f only when a leader is elected while f
// waits; no responders is returned at once. It is for the history
// records of a batch's won claims (RecordClaims), which the handlers'
// starts wait for: they are worth an election's wait only if they are
// still in flight anyway. Their publishes are asynchronous, and each copy
// keeps an acknowledgement pending in the JetStream context for a minute,
// so they are not also sent again on a timer as a single record is
// (publishClaim): a burst's records, copied every few seconds while the
// history leader is frozen, would fill the pending limit that the
// claims' own publishes share.
func (b *Backend) resendOnElection(ctx context.Context, f func(context.Context) error) error {
	return b.send(ctx, false, 0, f)
}

// send makes f until it is answered; see resend. A tryFor above zero
// bounds each try, which is repeated when that bound, not ctx, ended it.
func (b *Backend) send(ctx context.Context, poll bool, tryFor time.Duration, f func(context.Context) error) error {
	var pause *time.Timer
	defer func() {
		if pause != nil {
			pause.Stop()
		}
	}()
	for {
		gen := b.elect.current()
		var try context.Context
		var cancel context.CancelFunc
		if tryFor > 0 {
			try, cancel = context.WithTimeout(ctx, tryFor)
		} else {
			try, cancel = context.WithCancel(ctx)
		}
		stop := context.AfterFunc(gen, cancel)
		err := f(try)
		timedOut := try.Err() != nil && gen.Err() == nil
		stop()
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		switch {
		case timedOut:
			// The try's own bound ended it (a replica that answers
			// nothing): send it again.
		case gen.Err() != nil && (errors.Is(err, context.Canceled) || noResponders(err)):
			// A leader was elected while f waited: its answer, if any,
			// was dropped with the old leader. Send it again at once.
		case poll && (noResponders(err) || tryFor > 0 && unavailable(err)) && b.elected.Load():
			// The stream may be gone rather than leaderless: let the
			// next call bind again (ready), beside this one. A bucket of
			// one replica has no election to wait for: its error is
			// returned at once, as the stream's loss is. A read
			// (resendRead) also waits out a cluster electing its meta
			// leader, which answers "temporarily unavailable" for a
			// while; a write returns that error to its caller, whose
			// own retries decide.
			b.rebind.Store(true)
			if pause == nil {
				pause = time.NewTimer(resendPoll)
			} else {
				pause.Reset(resendPoll)
			}
			select {
			case <-gen.Done():
			case <-pause.C:
			case <-ctx.Done():
				return err
			}
		default:
			return err
		}
	}
}
