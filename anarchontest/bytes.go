package anarchontest

import (
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// allBytes is every byte value 0–255 once, then a NUL and an invalid
// UTF-8 sequence inside text, as a job piping `gzip` to stdout prints.
func allBytes() string {
	b := make([]byte, 0, 300)
	for i := range 256 {
		b = append(b, byte(i))
	}
	return string(b) + "text\x00more\xc3(\xff end"
}

// testBytes: any bytes in, the record out (SPEC §4). A result whose output
// holds every byte value and whose error holds a NUL and invalid UTF-8 is
// stored, and History returns each as given or as anarchon.EscapeText
// made it; the same through FinishResult where the store has it.
func testBytes(t *testing.T, h Harness, hasLeases bool) {
	out, errText := allBytes(), "failed: \x00\xfe\xff"
	check := func(t *testing.T, recs []anarchon.RunRecord, tok string) {
		t.Helper()
		for _, r := range recs {
			if r.Token != tok {
				continue
			}
			if r.Output != out && r.Output != anarchon.EscapeText(out) {
				t.Errorf("output read back as %q, want the bytes given or anarchon.EscapeText of them", r.Output)
			}
			if r.Error != errText && r.Error != anarchon.EscapeText(errText) {
				t.Errorf("error read back as %q, want the bytes given or anarchon.EscapeText of them", r.Error)
			}
			return
		}
		t.Errorf("no history record of token %s", tok)
	}
	t.Run("SaveResult", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 1)
		job := jobName("bytes")
		s.prepare(job, 10)
		slot := baseSlot()
		tok := token()
		if !s.claim(0, input(job, slot, tok, "a")) {
			t.Fatal("claim lost")
		}
		now := time.Now()
		s.save(0, job, anarchon.StoredResult{Slot: slot, Token: tok, InstanceID: "a", Attempt: 1, Status: anarchon.StatusError,
			StartedAt: now, FinishedAt: now, Error: errText, Output: out}, 10, 0)
		check(t, s.history(0, job, 0), tok)
	})
	if !hasLeases {
		return
	}
	t.Run("FinishResult", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 1)
		f := s.finisher(0)
		if f == nil {
			t.Skip("the backend has no ResultFinisher")
		}
		job := jobName("bytes-lease")
		s.prepare(job, 10)
		slot := baseSlot()
		tok := token()
		want(t, "claim", s.lclaim(0, rclaim(job, slot, tok, "a", longLease)), anarchon.OutcomeWon)
		now := time.Now()
		okf, err := f.FinishResult(s.ctx, anarchon.SaveResultInput{Job: job, HistorySize: 10, Result: anarchon.StoredResult{
			Slot: slot, Token: tok, InstanceID: "a", Attempt: 1, Status: anarchon.StatusError,
			StartedAt: now, FinishedAt: now, Error: errText, Output: out}})
		if err != nil || !okf {
			t.Fatalf("FinishResult = %v, %v", okf, err)
		}
		check(t, s.history(0, job, 0), tok)
	})
}
