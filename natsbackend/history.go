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

// histRec is one message of the history stream: a claim ("c") or a result
// ("r"). ClaimedAt is not stored: it is the message's server timestamp
// (of a missed, skipped or paused slot's result, which has no claim
// message).
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

// SaveResult appends r to the job's history and trims the job's subject to
// its newest 2·historySize messages (a claim and a result per run) with a
// stream purge that keeps them. historyTTL is stored with the record:
// History hides records older than it by the server's clock. Claims live
// in the KV bucket, so trimming history never reopens a slot.
func (b *Backend) SaveResult(ctx context.Context, in anarchon.SaveResultInput) error {
	enc, err := encodeJob(in.Job)
	if err != nil {
		return err
	}
	if err := checkHistory(in); err != nil {
		return err
	}
	h, err := b.ready(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	err = b.resend(ctx, func(ctx context.Context) error {
		_, err := b.js.PublishMsg(ctx, b.resultMsg(enc, in), b.resultOpts(in)...)
		return err
	})
	if err != nil {
		return b.wrap("save result", err)
	}
	return b.trim(ctx, h, enc, in.HistorySize)
}

// checkHistory refuses a negative history size or TTL.
func checkHistory(in anarchon.SaveResultInput) error {
	if in.HistorySize < 0 || in.HistoryTTL < 0 {
		return fmt.Errorf("%w: negative history size or TTL", ErrInvalid)
	}
	return nil
}

// resultMsg is the history record of a result, on the subject of job
// (encoded).
func (b *Backend) resultMsg(job string, in anarchon.SaveResultInput) *nats.Msg {
	r := in.Result
	rec, _ := json.Marshal(histRec{
		Kind: "r", Slot: r.Slot, Token: r.Token, Instance: r.InstanceID, Attempt: r.Attempt,
		Manual: r.Manual, Status: string(r.Status), Started: r.StartedAt, Finished: r.FinishedAt,
		Error: anarchon.EscapeText(r.Error), Output: anarchon.EscapeText(r.Output), TTLms: in.HistoryTTL.Milliseconds(), // JSON keeps valid UTF-8 only
	})
	return &nats.Msg{Subject: b.subject(job), Data: rec}
}

// resultOpts are the publish options of a result record: the history
// stream, and the Nats-Msg-Id "r.<token>.<instance>.<status>", with which the stream
// drops a second copy of the same result within its duplicate window (2
// minutes): a copy sent again across an election, or a repeat of the
// call after a lost reply. Another instance's record of the same token
// (an abandonment that every backup saves) is kept: the last one counts.
func (b *Backend) resultOpts(in anarchon.SaveResultInput) []jetstream.PublishOpt {
	return []jetstream.PublishOpt{
		jetstream.WithMsgID("r." + in.Result.Token + "." + in.Result.InstanceID + "." + string(in.Result.Status)),
		jetstream.WithExpectStream(b.opts.HistoryStream),
	}
}

func (b *Backend) trim(ctx context.Context, h handles, job string, historySize int) error {
	err := h.hist.Purge(ctx, jetstream.WithPurgeSubject(b.subject(job)), jetstream.WithPurgeKeep(keepFor(historySize)))
	return b.wrap("trim history", err)
}

// keepFor is how many messages of a job's subject a trim keeps: a claim
// and a result per run of historySize (<= 0: anarchon.DefaultHistorySize).
func keepFor(historySize int) uint64 {
	if historySize <= 0 {
		historySize = anarchon.DefaultHistorySize
	}
	return uint64(2 * historySize)
}

// History reads the job's subject of the history stream with an ordered
// consumer and merges claims and results with anarchon.BuildHistory.
// Records older than the HistoryTTL they were written with, by the
// server's clock, are left out.
//
// It reads at most what the stream held for the job when the call began
// (the subject's message count and the stream's last sequence, from one
// stream info request): records published meanwhile are not waited for,
// and a message the consumer delivers twice is counted once. The
// consumer reads one replica's copy: where that copy ends short of what
// the stream's leader holds (a replica still catching up after a
// failover, or gone mid-read), the read goes on from a new consumer
// until the leader's last record of the job is read. Once ctx is done it
// stops and returns an error wrapping ctx's error.
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
	ctx, cancel := b.boundLong(ctx)
	defer cancel()
	subj := b.subject(enc)
	// The stream info and the consumer's creation are sent again while
	// the stream elects a leader ("no responders"), as every read is
	// (resendRead): a list taken during a failover waits for it.
	var info *jetstream.StreamInfo
	err = b.resendRead(ctx, func(ctx context.Context) (err error) {
		b.infoMu.Lock() // Stream.Info writes the handle's cache
		defer b.infoMu.Unlock()
		info, err = h.hist.Info(ctx, jetstream.WithSubjectFilter(subj))
		return err
	})
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
	//
	// The consumer has one replica, placed on any server of the stream,
	// and delivers what that server's copy holds: after a failover the
	// copy of a server that was cut off may lack the latest records for a
	// while, and the server may go away mid-read ("no responders"). A read
	// that stops short of what the leader counted (stalled) therefore
	// asks the leader whether the subject holds more (behind) and, if so,
	// reads on from a new consumer after resendPoll, within ctx.
	var cons jetstream.Consumer
	open := func(from uint64) error {
		if cons != nil {
			dropConsumer(ctx, h.hist, cons)
		}
		cfg := jetstream.ConsumerConfig{
			FilterSubject:     subj,
			DeliverPolicy:     jetstream.DeliverAllPolicy,
			AckPolicy:         jetstream.AckNonePolicy,
			InactiveThreshold: 5 * time.Second,
			MemoryStorage:     true,
			Replicas:          1,
		}
		if from > 0 {
			cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
		}
		err := b.resendRead(ctx, func(ctx context.Context) (err error) {
			cons, err = h.hist.CreateConsumer(ctx, cfg)
			return err
		})
		if err != nil {
			cons = nil
		}
		return err
	}
	if err := open(0); err != nil {
		return nil, b.readErr(ctx, err)
	}
	defer func() {
		if cons != nil {
			dropConsumer(ctx, h.hist, cons) // else it expires by itself
		}
	}()
	var claims []anarchon.ClaimRecord
	var results, settled []anarchon.StoredResult
	var decided []anarchon.ClaimRecord // of slots settled missed, skipped or paused
	saved := map[string]bool{}         // tokens with a result
	seen := map[string]int{}           // claim token -> index, to fold repeats
	var read uint64                    // messages taken, at most total
	var seq uint64                     // highest stream sequence taken
	done := false
	for !done && read < total {
		if err := ctxErr(ctx, "read history"); err != nil {
			return nil, err
		}
		batch, err := cons.FetchNoWait(int(min(total-read, 256)))
		n, before, drained := 0, read, false
	batchLoop:
		for err == nil {
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
			if seq == lastSeq || read >= total {
				done = true
			}
			drained = md.NumPending == 0
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
				saved[r.Token] = true
				if st := anarchon.Status(r.Status); st == anarchon.StatusMissed || st == anarchon.StatusSkipped || st == anarchon.StatusPaused {
					// A slot a claim settled without running has no
					// claim message: the settling claimer saves its
					// result right after the claim, so the result's
					// server time stands for the claim's.
					decided = append(decided, anarchon.ClaimRecord{Slot: r.Slot, Token: r.Token,
						InstanceID: r.Instance, ClaimedAt: md.Timestamp.UTC(), Attempt: r.Attempt})
				}
			case "s":
				// The store's own record of a settled run (Replace): it
				// stands only where no result of the token is stored,
				// whichever came first.
				settled = append(settled, anarchon.StoredResult{Slot: r.Slot, Token: r.Token,
					InstanceID: r.Instance, Attempt: r.Attempt, Status: anarchon.Status(r.Status)})
			}
		}
		if err == nil {
			if err = batch.Error(); errors.Is(err, nats.ErrTimeout) {
				err = nil
			}
		}
		if err != nil && !noResponders(err) {
			return nil, b.readErr(ctx, err)
		}
		if done || err == nil && !drained && n > 0 && read > before {
			continue
		}
		// Stalled: the consumer's server went away (no responders), or
		// its copy holds nothing more although the leader counted more.
		// Records purged while reading (a result save trims the
		// subject) end the read; a copy behind the leader is waited for.
		more, err := b.historyBehind(ctx, h, subj, seq, lastSeq)
		if err != nil {
			return nil, b.readErr(ctx, err)
		}
		if !more {
			break
		}
		pause := time.NewTimer(resendPoll)
		select {
		case <-ctx.Done():
			pause.Stop()
			return nil, ctxErr(ctx, "read history")
		case <-pause.C:
		}
		if err := open(seq + 1); err != nil {
			return nil, b.readErr(ctx, err)
		}
	}
	for _, r := range settled {
		if !saved[r.Token] {
			results = append(results, r)
		}
	}
	for _, c := range decided {
		if _, ok := seen[c.Token]; !ok {
			claims = append(claims, c)
		}
	}
	return anarchon.BuildHistory(job, claims, results, limit), nil
}

// dropConsumer deletes a consumer of History's, within a second of its
// own: one left behind expires after its InactiveThreshold.
func dropConsumer(ctx context.Context, s jetstream.Stream, c jetstream.Consumer) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = s.DeleteConsumer(ctx, c.CachedInfo().Name)
}

// historyBehind reports whether the history stream's leader holds a
// message of subj after sequence seq and no later than lastSeq (the
// stream's last sequence when History began): whether a read that took
// messages up to seq stopped short. It asks with the JetStream API's
// message get, which only the stream's leader answers, unlike the direct
// get that any replica serves (and that the stream's handle would
// send). Without the default API prefix it asks the handle, which may be
// answered by a replica as far behind as the consumer's server.
func (b *Backend) historyBehind(ctx context.Context, h handles, subj string, seq, lastSeq uint64) (bool, error) {
	var last uint64
	err := b.resendRead(ctx, func(ctx context.Context) error {
		if !b.fastPath() {
			m, err := h.hist.GetLastMsgForSubject(ctx, subj)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				last = 0
				return nil
			}
			if err == nil {
				last = m.Sequence
			}
			return err
		}
		m, err := b.leaderLast(ctx, b.opts.HistoryStream, subj)
		last = m.Seq // 0 when the subject has no message
		return err
	})
	if err != nil {
		return false, err
	}
	// A message after lastSeq was published after the call began; one up
	// to it that the read did not reach is still to be delivered.
	return last > seq && seq < lastSeq, nil
}

// leaderMsg is the last message of a subject as the JetStream API's
// message get answers it (leaderLast); Seq is 0 when there is none.
type leaderMsg struct {
	Seq  uint64    `json:"seq"`
	Hdrs []byte    `json:"hdrs"`
	Data []byte    `json:"data"`
	Time time.Time `json:"time"` // the server's time stamp of the message
}

// leaderLast asks stream's leader for the last message of subject with
// the JetStream API's message get ($JS.API.STREAM.MSG.GET), which only
// the leader answers, unlike a direct get, which any replica serves. One
// request, not repeated: the caller sends it within resendRead. A subject
// without a message answers a zero leaderMsg and no error.
func (b *Backend) leaderLast(ctx context.Context, stream, subject string) (leaderMsg, error) {
	req, _ := json.Marshal(struct {
		LastFor string `json:"last_by_subj"`
	}{subject})
	m, err := b.js.Conn().RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, req)
	if err != nil {
		return leaderMsg{}, err
	}
	var resp struct {
		Message *leaderMsg          `json:"message"`
		Error   *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return leaderMsg{}, fmt.Errorf("message get answer: %w", err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return leaderMsg{}, nil
	case resp.Error != nil:
		return leaderMsg{}, resp.Error
	case resp.Message == nil:
		return leaderMsg{}, errors.New("message get answer without a message")
	}
	return *resp.Message, nil
}

// readErr translates an error of a history read: once ctx is done, the
// error wraps ctx's error as well as the driver's.
func (b *Backend) readErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("natsbackend: read history: %w: %w", cerr, err)
	}
	return b.wrap("read history", err)
}
