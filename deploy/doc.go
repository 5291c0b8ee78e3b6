// Package deploy holds the daemon's deployment recipes (Dockerfile,
// kubernetes/, systemd/) and, in its tests, their checks: the Kubernetes
// manifests decode strictly into the k8s.io/api types and keep the
// hand-over timing, and the systemd unit passes systemd-analyze verify. It
// is a module of its own so that k8s.io/api stays out of the published
// modules; it is never published.
package deploy
