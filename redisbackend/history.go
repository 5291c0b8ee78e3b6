package redisbackend

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anarchon/anarchon"
)

// SaveResult stores r and trims the job's history, in one script: to
// historySize records (<= 0 means anarchon.DefaultHistorySize) and, if
// historyTTL > 0, to records written (claimed or saved) less than
// historyTTL ago by the server's clock. A run still running or released is never trimmed. Trimming
// a slot's last record forgets its claim and raises the job's watermark.
func (b *Backend) SaveResult(ctx context.Context, in anarchon.SaveResultInput) error {
	if err := b.check(); err != nil {
		return err
	}
	keys, args, err := b.saveArgs(in)
	if err != nil {
		return err
	}
	_, err = scriptSave.Run(ctx, b.client, keys, args...).Result()
	return b.saveAnswer(in, err)
}

// saveArgs refuses a result's bad input before any I/O, and returns the
// KEYS and ARGV of scriptSave for it.
func (b *Backend) saveArgs(in anarchon.SaveResultInput) (keys []string, args []any, err error) {
	job, r, historySize, historyTTL := in.Job, in.Result, in.HistorySize, in.HistoryTTL
	if job == "" {
		return nil, nil, fmt.Errorf("%w: empty job name", ErrInvalidInput)
	}
	if err := checkSlot(r.Slot); err != nil {
		return nil, nil, err
	}
	if historyTTL < 0 {
		return nil, nil, fmt.Errorf("%w: negative history TTL", ErrInvalidInput)
	}
	if historySize <= 0 {
		historySize = anarchon.DefaultHistorySize
	}
	data, err := json.Marshal(encodeResult(r))
	if err != nil {
		return nil, nil, fmt.Errorf("redisbackend: save result %q: %w", job, err)
	}
	k := b.keys(job)
	return []string{k.run, k.claims, k.hist, k.results, k.age},
		[]any{slotArg(r.Slot), r.Token, string(data), historySize, historyTTL.Milliseconds()}, nil
}

// saveAnswer is SaveResult's answer for the error of scriptSave.
func (b *Backend) saveAnswer(in anarchon.SaveResultInput, err error) error {
	if err != nil {
		return b.wrap(fmt.Sprintf("save result %q slot %d", in.Job, in.Result.Slot), err)
	}
	return nil
}

// History returns at most limit runs of job (limit <= 0: all retained),
// newest first, built with [anarchon.BuildHistory] from the stored claims
// and results. It reads one consistent snapshot (one script).
func (b *Backend) History(ctx context.Context, job string, limit int) ([]anarchon.RunRecord, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	if job == "" {
		return nil, fmt.Errorf("%w: empty job name", ErrInvalidInput)
	}
	k := b.keys(job)
	res, err := scriptHistory.Run(ctx, b.client, []string{k.claims, k.hist, k.results, k.run}, max(limit, 0)).Result()
	if err != nil {
		return nil, b.wrap(fmt.Sprintf("history %q", job), err)
	}
	arr, ok := res.([]any)
	if !ok || len(arr)%3 != 0 {
		return nil, b.unexpected("history", res)
	}
	var claims []anarchon.ClaimRecord
	var results []anarchon.StoredResult
	for i := 0; i < len(arr); i += 3 {
		m, _ := arr[i].(string)
		c, _ := arr[i+1].(string)
		r, _ := arr[i+2].(string)
		if c != "" {
			var w wireClaim
			if err := json.Unmarshal([]byte(c), &w); err != nil {
				return nil, fmt.Errorf("%w: history %q: claim record: %w", ErrUnexpectedReply, job, err)
			}
			w.Slot, w.Token, _ = strings.Cut(m, "/")
			claims = append(claims, w.record())
		}
		if r != "" {
			var w wireResult
			if err := json.Unmarshal([]byte(r), &w); err != nil {
				return nil, fmt.Errorf("%w: history %q: result record: %w", ErrUnexpectedReply, job, err)
			}
			results = append(results, w.result())
		}
	}
	return anarchon.BuildHistory(job, claims, results, limit), nil
}
