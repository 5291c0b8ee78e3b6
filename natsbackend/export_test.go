package natsbackend

// SetNoFastPath makes batches use the KV API, one request per key, as
// they do on a JetStream context with an API prefix or a domain; it
// returns the restore.
func SetNoFastPath(off bool) (restore func()) {
	old := noFastPath
	noFastPath = off
	return func() { noFastPath = old }
}

// SetRebindHook makes every rebind call f as it begins (see ready); it
// returns the restore.
func SetRebindHook(f func()) (restore func()) {
	old := rebindHook
	rebindHook = f
	return func() { rebindHook = old }
}

// MarkRebind makes the next call bind the bucket and the stream again, as
// a call that met no responders does.
func (b *Backend) MarkRebind() { b.rebind.Store(true) }
