package natsbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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
// between the two calls if it aged out of the bucket at that moment.
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
	job, err := encodeJob(in.Job)
	if err != nil {
		return false, err
	}
	if err := checkToken(in.Token); err != nil {
		return false, err
	}
	h, err := b.ready(ctx)
	if err != nil {
		return false, err
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	val, _ := json.Marshal(claimValue{Token: in.Token, Instance: in.InstanceID})
	key := claimKey(job, in.Slot)
	for range claimRetries {
		_, err := h.kv.Create(ctx, key, val)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return false, b.wrap("claim", err)
		}
		e, err := h.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue
		}
		if err != nil {
			return false, b.wrap("read claim", err)
		}
		var cv claimValue
		if err := json.Unmarshal(e.Value(), &cv); err != nil {
			return false, fmt.Errorf("natsbackend: claim %s holds an unreadable value: %w", key, err)
		}
		return cv.Token == in.Token, nil
	}
	return false, fmt.Errorf("natsbackend: claim %s: the key kept vanishing", key)
}

// histRec is one message of the history stream: a claim ("c") or a result
// ("r"). ClaimedAt is not stored: it is the message's server timestamp.
type histRec struct {
	Kind     string    `json:"k"`
	Slot     int64     `json:"s"`
	Token    string    `json:"t,omitempty"`
	Instance string    `json:"i,omitempty"`
	Attempt  int       `json:"a,omitempty"`
	Manual   bool      `json:"m,omitempty"`
	Status   string    `json:"st,omitempty"`
	Started  time.Time `json:"sa,omitzero"`
	Finished time.Time `json:"fa,omitzero"`
	Error    string    `json:"e,omitempty"`
	Output   string    `json:"o,omitempty"`
	TTLms    int64     `json:"ttl,omitempty"` // the job's HistoryTTL when written
}

func (b *Backend) subject(job string) string { return b.opts.HistorySubject + "." + job }

// publishClaim appends a claim record. Its Nats-Msg-Id is "c.<token>", so
// the stream drops a repeat of the same claim inside its duplicate window
// (2 minutes).
func (b *Backend) publishClaim(ctx context.Context, job string, in anarchon.ClaimInput, attempt int, manual bool) error {
	rec, _ := json.Marshal(histRec{
		Kind: "c", Slot: in.Slot, Token: in.Token, Instance: in.InstanceID,
		Attempt: attempt, Manual: manual, TTLms: in.HistoryTTL.Milliseconds(),
	})
	_, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: b.subject(job), Data: rec},
		jetstream.WithMsgID("c."+in.Token), jetstream.WithExpectStream(b.opts.HistoryStream))
	if err != nil {
		return b.wrap("record claim", err)
	}
	return nil
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

// SaveResult appends r to the job's history and trims the job's subject to
// its newest 2·historySize messages (a claim and a result per run) with a
// stream purge that keeps them. historyTTL is stored with the record:
// History hides records older than it by the server's clock. Claims live
// in the KV bucket, so trimming history never reopens a slot.
func (b *Backend) SaveResult(ctx context.Context, in anarchon.SaveResultInput) error {
	job, r, historySize, historyTTL := in.Job, in.Result, in.HistorySize, in.HistoryTTL
	enc, err := encodeJob(job)
	if err != nil {
		return err
	}
	if historySize < 0 || historyTTL < 0 {
		return fmt.Errorf("%w: negative history size or TTL", ErrInvalid)
	}
	h, err := b.ready(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	rec, _ := json.Marshal(histRec{
		Kind: "r", Slot: r.Slot, Token: r.Token, Instance: r.InstanceID, Attempt: r.Attempt,
		Manual: r.Manual, Status: string(r.Status), Started: r.StartedAt, Finished: r.FinishedAt,
		Error: r.Error, Output: r.Output, TTLms: historyTTL.Milliseconds(),
	})
	if _, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: b.subject(enc), Data: rec},
		jetstream.WithExpectStream(b.opts.HistoryStream)); err != nil {
		return b.wrap("save result", err)
	}
	return b.trim(ctx, h, enc, historySize)
}

func (b *Backend) trim(ctx context.Context, h handles, job string, historySize int) error {
	if historySize <= 0 {
		historySize = anarchon.DefaultHistorySize
	}
	err := h.hist.Purge(ctx, jetstream.WithPurgeSubject(b.subject(job)), jetstream.WithPurgeKeep(uint64(2*historySize)))
	return b.wrap("trim history", err)
}

// History reads the job's subject of the history stream with an ordered
// consumer and merges claims and results with anarchon.BuildHistory.
// Records older than the HistoryTTL they were written with, by the
// server's clock, are left out.
//
// It reads at most what the stream held for the job when the call began
// (the subject's message count and the stream's last sequence, from one
// stream info request): records published meanwhile are not waited for,
// and a message the consumer delivers twice is counted once. Once ctx is
// done it stops and returns an error wrapping ctx's error.
func (b *Backend) History(ctx context.Context, job string, limit int) ([]anarchon.RunRecord, error) {
	enc, err := encodeJob(job)
	if err != nil {
		return nil, err
	}
	h, err := b.ready(ctx)
	if err != nil {
		return nil, err
	}
	if err := ctxErr(ctx, "read history"); err != nil {
		return nil, err
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	subj := b.subject(enc)
	b.infoMu.Lock() // Stream.Info writes the handle's cache
	info, err := h.hist.Info(ctx, jetstream.WithSubjectFilter(subj))
	b.infoMu.Unlock()
	if err != nil {
		return nil, b.readErr(ctx, err)
	}
	total := info.State.Subjects[subj]
	if total == 0 {
		return []anarchon.RunRecord{}, nil
	}
	lastSeq := info.State.LastSeq
	now := info.TimeStamp
	// A plain pull consumer without acks: unlike an ordered consumer it is
	// not recreated between fetches, so each fetch continues where the
	// last one stopped. The server deletes it after InactiveThreshold.
	cons, err := h.hist.CreateConsumer(ctx, jetstream.ConsumerConfig{
		FilterSubject:     subj,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: 5 * time.Second,
		MemoryStorage:     true,
		Replicas:          1,
	})
	if err != nil {
		return nil, b.readErr(ctx, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = h.hist.DeleteConsumer(dctx, cons.CachedInfo().Name) // else it expires by itself
	}()
	var claims []anarchon.ClaimRecord
	var results []anarchon.StoredResult
	seen := map[string]int{} // claim token -> index, to fold repeats
	var read uint64          // messages taken, at most total
	var seq uint64           // highest stream sequence taken
	done := false
	for !done && read < total {
		if err := ctxErr(ctx, "read history"); err != nil {
			return nil, err
		}
		batch, err := cons.FetchNoWait(int(min(total-read, 256)))
		if err != nil {
			return nil, b.readErr(ctx, err)
		}
		n, before := 0, read
	batchLoop:
		for {
			var m jetstream.Msg
			var ok bool
			select {
			case <-ctx.Done():
				return nil, ctxErr(ctx, "read history")
			case m, ok = <-batch.Messages():
			}
			if !ok {
				break
			}
			n++
			md, err := m.Metadata()
			if err != nil {
				return nil, b.readErr(ctx, err)
			}
			if md.Sequence.Stream > lastSeq {
				done = true // published after the call began
				continue
			}
			if md.Sequence.Stream <= seq {
				continue // delivered again after a consumer reset
			}
			seq = md.Sequence.Stream
			read++
			if md.NumPending == 0 || seq == lastSeq || read >= total {
				done = true
			}
			var r histRec
			if json.Unmarshal(m.Data(), &r) != nil {
				continue batchLoop // a record this version cannot read
			}
			if r.TTLms > 0 && !now.IsZero() && md.Timestamp.Add(time.Duration(r.TTLms)*time.Millisecond).Before(now) {
				continue
			}
			switch r.Kind {
			case "c":
				c := anarchon.ClaimRecord{Slot: r.Slot, Token: r.Token, InstanceID: r.Instance,
					ClaimedAt: md.Timestamp.UTC(), Attempt: r.Attempt, Manual: r.Manual}
				if i, ok := seen[r.Token]; ok && r.Token != "" {
					if c.Attempt > claims[i].Attempt {
						claims[i].Attempt = c.Attempt
					}
					continue
				}
				seen[r.Token] = len(claims)
				claims = append(claims, c)
			case "r":
				results = append(results, anarchon.StoredResult{Slot: r.Slot, Token: r.Token,
					InstanceID: r.Instance, Attempt: r.Attempt, Status: anarchon.Status(r.Status),
					StartedAt: r.Started, FinishedAt: r.Finished, Error: r.Error, Output: r.Output, Manual: r.Manual})
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return nil, b.readErr(ctx, err)
		}
		if n == 0 || read == before {
			break // purged while reading, or nothing new delivered
		}
	}
	return anarchon.BuildHistory(job, claims, results, limit), nil
}

// readErr translates an error of a history read: once ctx is done, the
// error wraps ctx's error as well as the driver's.
func (b *Backend) readErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("natsbackend: read history: %w: %w", cerr, err)
	}
	return b.wrap("read history", err)
}
