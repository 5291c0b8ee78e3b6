package redisbackend

import "time"

// SetEpochCheckEvery sets how often claims read the sentinel key, for a
// test that must see a loss at the next claim; it returns the restore.
func SetEpochCheckEvery(d time.Duration) (restore func()) {
	old := epochCheckEvery
	epochCheckEvery = d
	return func() { epochCheckEvery = old }
}

// SetClusterReload turns the slot-map reload after failover errors on or
// off, for a test that measures go-redis without it; it returns the restore.
func SetClusterReload(on bool) (restore func()) {
	old := clusterReloadOff
	clusterReloadOff = !on
	return func() { clusterReloadOff = old }
}
