package anarchonui

import (
	"errors"
	"net/http"
	"time"

	"github.com/anarchon/anarchon"
)

// replicaRow is one instance of the registry as the replicas page shows
// it. Differs marks an instance whose job set is not the one most live
// instances share; Jobs names the jobs that differ.
type replicaRow struct {
	anarchon.InstanceRecord
	Self    bool
	Differs bool
	Jobs    []string
	Ago     time.Duration // since LastSeen, by the store's clock
}

// replicasPage lists the instance registry: liveness, version, clock
// offset and job-set fingerprint, with the live instances whose job sets
// differ from the majority's highlighted.
func (h *handler) replicasPage(w http.ResponseWriter, r *http.Request) {
	p := h.newPage("Replicas", "replicas")
	recs, err := h.s.Instances(r.Context())
	switch {
	case errors.Is(err, anarchon.ErrNoRegistry):
		p.NoReg = true
	case err != nil:
		h.fail(p, "instance registry", err)
	}
	p.Diffs = anarchon.DiffJobSets(recs)
	differs := map[string][]string{}
	for _, d := range p.Diffs {
		differs[d.Instance] = d.Jobs()
	}
	now := h.storeNow()
	for _, rec := range recs {
		jobs, bad := differs[rec.ID]
		p.Replicas = append(p.Replicas, replicaRow{
			InstanceRecord: rec, Self: rec.ID == h.s.InstanceID(),
			Differs: bad, Jobs: jobs, Ago: now.Sub(rec.LastSeen),
		})
	}
	h.render(w, r, http.StatusOK, "replicas.html", p)
}
