package anarchon_test

import (
	"context"
	"fmt"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// Two instances share a store that keeps an instance registry; one has a
// job the other lacks. Instances lists both, DiffJobSets names the job,
// and a stopped instance is listed as stopped.
func ExampleScheduler_Instances() {
	ctx := context.Background()
	store := membackend.New(nil)
	work := func(context.Context, *anarchon.Run) error { return nil }

	web1 := anarchon.New(store, &anarchon.Options{InstanceID: "web-1", Logger: quiet})
	_ = web1.Every("sweep", time.Minute, work, nil)
	web2 := anarchon.New(store, &anarchon.Options{InstanceID: "web-2", Logger: quiet})
	_ = web2.Every("sweep", time.Minute, work, nil)
	_ = web2.Every("report", time.Hour, work, nil)
	_ = web1.Start(ctx)
	_ = web2.Start(ctx)
	defer web1.Stop(ctx)

	recs, _ := web1.Instances(ctx)
	for _, r := range recs {
		fmt.Println(r.ID, r.State, r.NumJobs(), "jobs")
	}
	for _, d := range anarchon.DiffJobSets(recs) {
		fmt.Printf("%s differs from %s: only there %v\n", d.Instance, d.Reference, d.Extra)
	}

	_ = web2.Stop(ctx)
	recs, _ = web1.Instances(ctx)
	fmt.Println(recs[1].ID, recs[1].State)
	// Output:
	// web-1 live 1 jobs
	// web-2 live 2 jobs
	// web-2 differs from web-1: only there [report]
	// web-2 stopped
}
