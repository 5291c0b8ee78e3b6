package sqlbackendtest

import (
	"sync"
	"testing"

	"github.com/anarchon/anarchon"
)

// ConcurrentMigration starts 8 handles from open on one empty database at
// once, in 5 rounds of a fresh database each: Init and then PrepareJob must
// succeed for every one of them (the schema creation of sqlbackend must
// tolerate racing instances).
func ConcurrentMigration(t *testing.T, open Open) {
	for round := range 5 {
		bs := open(t, 8)
		var wg sync.WaitGroup
		errs := make([]error, len(bs))
		start := make(chan struct{})
		for i, b := range bs {
			wg.Go(func() {
				<-start
				if err := b.Init(t.Context()); err != nil {
					errs[i] = err
					return
				}
				errs[i] = b.PrepareJob(t.Context(), anarchon.PrepareJobInput{Job: "job", HistorySize: 10})
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, instance %d: %v", round, i, err)
			}
		}
	}
}
