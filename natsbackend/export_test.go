package natsbackend

// SetNoFastPath makes batches use the KV API, one request per key, as
// they do on a JetStream context with an API prefix or a domain; it
// returns the restore.
func SetNoFastPath(off bool) (restore func()) {
	old := noFastPath
	noFastPath = off
	return func() { noFastPath = old }
}
