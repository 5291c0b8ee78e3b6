package natsbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/anarchon/anarchon"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// claimValue is the value of a claim key "c.<job>.<slot>".
type claimValue struct {
	Token    string `json:"t"`
	Instance string `json:"i,omitempty"`
}

// claimRetries bounds the Create/Get loop of Claim: a key can only vanish
// between the two calls if it aged out of the bucket at that moment (or
// was deleted by hand).
const claimRetries = 3

// Claim creates the key "c.<job>.<slot>" with KV Create, a put that the
// server accepts only if the key has no value (SPEC §4, the atomic step).
// The winner's token is the key's value. A Create that loses reads the key
// and answers true if the stored token is in.Token (repeat safety), false
// otherwise. Claim does not write history; see [Backend.RecordClaim].
//
// Errors: ErrInvalid for an empty job or token; anarchon.ErrClosed after
// Close; server errors wrapped with the jetstream error reachable.
func (b *Backend) Claim(ctx context.Context, in anarchon.ClaimInput) (bool, error) {
	h, job, ctx, cancel, err := b.runArgs(ctx, in.Job, in.Token)
	if err != nil {
		return false, err
	}
	defer cancel()
	val, _ := json.Marshal(claimValue{Token: in.Token, Instance: in.InstanceID})
	key := claimKey(job, in.Slot)
	st, paused, err := b.admit(ctx, h, job, in)
	if err != nil {
		return false, err
	}
	if paused {
		val, _ = json.Marshal(claimValue{Token: anarchon.PausedToken(in.Slot), Instance: in.InstanceID})
	}
	for i := range claimRetries {
		// Sent again if a leader is elected meanwhile (see resend): a
		// second copy that loses to the first reads this claim's token
		// below and wins, as a repeated claim does.
		err := b.resend(ctx, func(ctx context.Context) (err error) {
			if i == 0 {
				// An Update at revision 0 is the Create's put in one
				// request: KeyValue.Create reads the key after a loss, to
				// write over a delete marker, and the read below reads it
				// anyway. A key found deleted is written by Create on the
				// next turn.
				_, err = h.kv.Update(ctx, key, val, 0)
			} else {
				_, err = h.kv.Create(ctx, key, val)
			}
			return err
		})
		if err == nil {
			if paused {
				return false, b.savePaused(ctx, in, st)
			}
			return true, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return false, b.wrap("claim", err)
		}
		var cv claimValue
		e, err := b.getJSON(ctx, h, key, "claim", &cv)
		if err != nil {
			return false, err
		}
		if e == nil {
			continue // aged out (or deleted) before the read
		}
		return cv.Token == in.Token, nil
	}
	return false, fmt.Errorf("natsbackend: claim %s: the key kept vanishing", key)
}

// admit makes the checks both claim paths make before they create a new
// slot's key: never early (checkEarly) and the job's pause state, read
// just before the Create (see control.go for the window). When the cached
// clock sample is stale, the clock read and the state read go side by
// side, so the Create waits for one round trip, not two.
func (b *Backend) admit(ctx context.Context, h handles, job string, in anarchon.ClaimInput) (stateValue, bool, error) {
	early := make(chan error, 1)
	if b.clk.fresh() {
		early <- b.checkEarly(ctx, h, in.Job, in.Slot)
	} else {
		go func() { early <- b.checkEarly(ctx, h, in.Job, in.Slot) }()
	}
	st, e, err := b.readState(ctx, h, job)
	if eerr := <-early; eerr != nil {
		return stateValue{}, false, eerr
	}
	if err != nil {
		return stateValue{}, false, err
	}
	return st, e != nil && st.Paused, nil
}

func (b *Backend) subject(job string) string { return b.opts.HistorySubject + "." + job }

// publishClaim appends a claim record. Its Nats-Msg-Id is "c.<token>", so
// the stream drops a repeat of the same claim inside its duplicate window
// (2 minutes).
func (b *Backend) publishClaim(ctx context.Context, job string, in anarchon.ClaimInput, attempt int, manual bool) error {
	m, opts := b.claimMsg(job, in, attempt, manual)
	// Sent again if the history stream elects a leader meanwhile, and
	// after each readTry (a copy sent to a leader just elected may be
	// dropped too, with no further election to end the wait: once, under
	// load, a record waited out the whole Timeout); no responders is
	// returned at once. The stream drops a second copy by its message ID.
	// A frozen leader of the history stream otherwise holds the record,
	// and the handler's start behind it, for Options.Timeout, although
	// its successor could take it as soon as it is elected.
	err := b.send(ctx, false, b.readTry(), func(ctx context.Context) error {
		_, err := b.js.PublishMsg(ctx, m, opts...)
		return err
	})
	if err != nil {
		return b.wrap("record claim", err)
	}
	return nil
}

// claimMsg is the history message of a claim record and its publish
// options (publishClaim).
func (b *Backend) claimMsg(job string, in anarchon.ClaimInput, attempt int, manual bool) (*nats.Msg, []jetstream.PublishOpt) {
	rec, _ := json.Marshal(histRec{
		Kind: "c", Slot: in.Slot, Token: in.Token, Instance: in.InstanceID,
		Attempt: attempt, Manual: manual, TTLms: in.HistoryTTL.Milliseconds(),
	})
	return &nats.Msg{Subject: b.subject(job), Data: rec},
		[]jetstream.PublishOpt{jetstream.WithMsgID("c." + in.Token), jetstream.WithExpectStream(b.opts.HistoryStream)}
}

// RecordClaim appends the won claim to the job's history, so History shows
// it as running until its result is saved (anarchon.ClaimRecorder). A
// repeat with the same token inside two minutes is dropped by the stream.
func (b *Backend) RecordClaim(ctx context.Context, in anarchon.ClaimInput) error {
	job, err := encodeJob(in.Job)
	if err != nil {
		return err
	}
	if err := checkToken(in.Token); err != nil {
		return err
	}
	if _, err := b.ready(ctx); err != nil {
		return err
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	return b.publishClaim(ctx, job, in, 0, false)
}

// RecordClaims records many won claims (anarchon.ClaimRecordBatcher),
// each as [Backend.RecordClaim] would: their records are all published
// before any acknowledgement is awaited, so a batch waits for about one
// round trip whatever its size. A claim's bad input or failed publish is
// its own error; the error is non-nil only when the backend is not ready
// (closed, or its bucket and stream are not bound).
func (b *Backend) RecordClaims(ctx context.Context, in []anarchon.ClaimInput) ([]error, error) {
	if _, err := b.ready(ctx); err != nil {
		return nil, err
	}
	errs := make([]error, len(in))
	jobs := make([]string, len(in))
	var live []int
	for i, c := range in {
		if jobs[i], errs[i] = encodeJob(c.Job); errs[i] == nil {
			errs[i] = checkToken(c.Token)
		}
		if errs[i] == nil {
			live = append(live, i)
		}
	}
	if len(live) == 0 {
		return errs, nil
	}
	pctx, cancel := b.bound(ctx)
	defer cancel()
	// As RecordClaim, repeated only on an election: the handlers' starts
	// wait for these records (publishClaim).
	b.publishAllBy(pctx, b.resendOnElection, "record claim", live, make([]uint64, len(in)), errs, func(i int) (*nats.Msg, []jetstream.PublishOpt) {
		return b.claimMsg(jobs[i], in[i], 0, false)
	})
	for _, i := range live {
		if errs[i] != nil {
			errs[i] = b.wrap("record claim", errs[i])
		}
	}
	return errs, nil
}

// RecordManualRun appends a manual claim record to the job's history; it
// deduplicates nothing but a repeat of the same token, and returns in.Slot.
func (b *Backend) RecordManualRun(ctx context.Context, in anarchon.ClaimInput) (int64, error) {
	job, err := encodeJob(in.Job)
	if err != nil {
		return 0, err
	}
	if err := checkToken(in.Token); err != nil {
		return 0, err
	}
	if _, err := b.ready(ctx); err != nil {
		return 0, err
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	if err := b.publishClaim(ctx, job, in, 0, true); err != nil {
		return 0, err
	}
	return in.Slot, nil
}

// PrepareJob checks the job name; the bucket and the stream are shared by
// all jobs and made by Init, so there is nothing else to set up.
func (b *Backend) PrepareJob(ctx context.Context, in anarchon.PrepareJobInput) error {
	job, historySize := in.Job, in.HistorySize
	if _, err := encodeJob(job); err != nil {
		return err
	}
	if historySize < 0 {
		return fmt.Errorf("%w: negative history size %d", ErrInvalid, historySize)
	}
	_, err := b.ready(ctx)
	return err
}
