package anarchon

import (
	"context"
	"sync"
	"time"

	"github.com/anarchon/anarchon/internal/runner"
)

// peers is this instance's place among the live instances of the last
// registry listing (SPEC §4, "Waves"): n of them, this one at index self
// of their IDs in order. The zero value, and n = 1, is an instance that
// knows of no other: every slot is its own to claim first.
type peers struct{ n, self int }

// peersOf places the instance id among the live records of a listing.
// It counts itself whether or not the listing has its record yet (the
// first listing at Start comes before the first registration).
func peersOf(id string, recs []InstanceRecord) peers {
	p := peers{n: 1}
	for _, rec := range recs {
		if !rec.Live() || rec.ID == id {
			continue
		}
		p.n++
		if rec.ID < id {
			p.self++
		}
	}
	return p
}

// rank is the wave in which this instance claims the slot: 0 when the slot
// is its own, r when it is the own slot of the instance r places before it
// in the IDs' ring.
func (p peers) rank(job string, slot time.Time) int {
	if p.n <= 1 {
		return 0
	}
	return (p.self - p.owner(job, slot) + p.n) % p.n
}

// owner is the index of the instance whose own slot this is. Every
// instance that shares a listing gives each slot to the same one, and the
// slots spread evenly: the index is FNV-1a (64 bits) of the job's name and
// the slot's Unix milliseconds (little-endian), modulo n.
func (p peers) owner(job string, slot time.Time) int {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(job); i++ {
		h = (h ^ uint64(job[i])) * prime
	}
	ms := uint64(slot.UnixMilli())
	for i := range 8 {
		h = (h ^ (ms >> (8 * i) & 0xff)) * prime
	}
	return int(h % uint64(p.n))
}

// setPeers keeps the place of a registry listing for the next bursts.
func (s *Scheduler) setPeers(recs []InstanceRecord) {
	p := peersOf(s.opts.InstanceID, recs)
	s.peers.Store(&p)
}

// waves sorts the slots of a group by their rank among the peers: the
// slots of wave r are claimed once the store has answered the claims of
// wave r-1 (fireWaves). With no peers known, the group is one wave.
func (s *Scheduler) waves(group []runner.Due[*job]) [][]runner.Due[*job] {
	p := s.peers.Load()
	if p == nil || p.n <= 1 || len(group) < 2 {
		return [][]runner.Due[*job]{group}
	}
	ws := make([][]runner.Due[*job], p.n)
	for _, d := range group {
		r := p.rank(d.V.name, d.Slot)
		ws[r] = append(ws[r], d)
	}
	return ws
}

// MaxWavePause bounds the pause before a later wave of a burst (SPEC §4,
// "Waves"): after the answers of wave r−1, wave r waits as long again as
// wave r−1 took, but never longer than this.
const MaxWavePause = 250 * time.Millisecond

// fireWaves claims the waves of a group one after another: the first now,
// each later one in a goroutine (counted in inflight, so that Stop waits
// for it) once every claim of the one before is answered and as long
// again has passed (up to MaxWavePause). ctx ending (Stop began) ends the
// pause and the waves not yet sent, as it ends a wave's batches not yet
// sent.
//
// The pause is for the other instances' first waves: they started about
// when this one did and take about as long, and a later wave sent beside
// them (claims that lose, in the usual case) costs the store and the
// machine work that their winning claims wait behind (BENCHMARKS.md §8).
// An owner that claims nothing costs its slots that pause beside the
// wave's answer.
//
// started counts the won plain slots of every wave until their handlers
// begin (Runner.FirePlain). done, if not nil, is called once every claim
// of the last wave is answered; firstDone, if not nil, once the first wave's claims are
// answered and the pause after it is over (when the next wave is sent),
// or with done when there is no later wave. firstDone is nil when done
// is, and in the calls for the later waves.
func (s *Scheduler) fireWaves(ctx context.Context, ws []wave, started *sync.WaitGroup, done, firstDone func()) {
	var answered sync.WaitGroup
	began := time.Now()
	s.fireWave(ctx, ws[0], &answered, started)
	rest := ws[1:]
	for len(rest) > 0 && rest[0].empty() {
		rest = rest[1:]
	}
	if len(rest) == 0 && done == nil {
		return
	}
	s.inflight.Add(1)
	go func() {
		defer s.inflight.Done()
		answered.Wait()
		if len(rest) == 0 {
			if firstDone != nil {
				firstDone()
			}
			done()
			return
		}
		pause := time.NewTimer(min(time.Since(began), MaxWavePause))
		select {
		case <-pause.C:
		case <-ctx.Done():
			pause.Stop()
		}
		if firstDone != nil {
			firstDone()
		}
		s.fireWaves(ctx, rest, started, done, nil)
	}()
}

// ResultHold is the longest a run's result waits for the claims of a
// burst (SPEC §4, "Claims first"): while an instance's claims of a group
// of more slots than one batch are in flight, the results of its plain
// runs are held until the last of those claims is answered and the
// handlers of the plain runs they won have begun, and the
// finishes of its leased runs that can wait (finishHold) until its first
// wave's claims are answered and the pause after it is over (fireWaves),
// or this long, whichever comes first. A finish is held for less than a
// result because a holder killed while it waits leaves a run that ended
// to a backup, which runs it again (SPEC §6); the first wave's pause is
// the time the other instances' first waves, whose claims it would slow,
// are expected to take.
const ResultHold = time.Second

// finishHold is how long the finish of a's leased run may wait for a
// burst's claims (SPEC §4, "Claims first"): ResultHold, cut so that the
// finish still leaves at least ResultHold before the lease's safe end
// (a backup must not win a run that ended: it would run it again) and
// before the job's next slot (whose claim the finish may decide, §6:
// overlap); 0 when less is left.
func (s *Scheduler) finishHold(a *attempt) time.Duration {
	if a.SafeEnd.IsZero() {
		return 0
	}
	hold := min(ResultHold, time.Until(a.SafeEnd)-ResultHold)
	if hold > 0 {
		next := a.Job.job.nextSlot(a.SlotTime())
		hold = min(hold, next.Sub(s.now())-ResultHold)
	}
	return max(hold, 0)
}

// claimsFirst holds result saves while bursts' claims, and the starts of
// the plain runs they won, are in flight (SPEC §4, "Claims first"), or
// leased finishes while bursts' first waves are (Scheduler.firstWaves).
// The zero value has no burst in flight.
type claimsFirst struct {
	mu      sync.Mutex
	n       int           // bursts in flight
	idle    chan struct{} // closed when n drops to 0, or at stop; nil while nothing is held
	stopped bool          // Stop began: nothing is held any more
}

// enter counts a burst whose claims are going to the store.
func (g *claimsFirst) enter() {
	g.mu.Lock()
	if g.n == 0 && !g.stopped {
		g.idle = make(chan struct{})
	}
	g.n++
	g.mu.Unlock()
}

// leave counts the end of a burst: every one of its claims answered (and,
// for Scheduler.bursts, every plain run they won begun; fireGroup).
func (g *claimsFirst) leave() {
	g.mu.Lock()
	g.n--
	if g.n == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
	g.mu.Unlock()
}

// stop ends every hold, and holds nothing from now on: Stop waits for
// the runs to end, and a finish still held when it returns at its
// deadline would meet a closed store and leave its slot to a backup.
func (g *claimsFirst) stop() {
	g.mu.Lock()
	g.stopped = true
	if g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
	g.mu.Unlock()
}

// wait returns once no burst is in flight (leave), after hold at most,
// or when ctx ends or Stop begins.
func (g *claimsFirst) wait(ctx context.Context, hold time.Duration) {
	g.mu.Lock()
	idle := g.idle
	g.mu.Unlock()
	if idle == nil || hold <= 0 {
		return
	}
	t := time.NewTimer(hold)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	case <-ctx.Done():
	}
}
