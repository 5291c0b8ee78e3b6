package anarchonui

import "net/http"

// replicaRow waits for the instance registry (anarchon.InstanceRecord).
type replicaRow struct{}

// replicasPage says that the registry is not available yet; it is replaced
// when the instance registry is in the root package.
func (h *handler) replicasPage(w http.ResponseWriter, r *http.Request) {
	p := h.newPage("Replicas", "replicas")
	p.NoReg = true
	h.render(w, r, http.StatusOK, "replicas.html", p)
}
