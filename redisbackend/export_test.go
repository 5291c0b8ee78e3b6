package redisbackend

import "time"

// SetEpochCheckEvery sets how often claims read the sentinel key, for a
// test that must see a loss at the next claim; it returns the restore.
func SetEpochCheckEvery(d time.Duration) (restore func()) {
	old := epochCheckEvery
	epochCheckEvery = d
	return func() { epochCheckEvery = old }
}

// KeySlot is keySlot, the Redis Cluster slot of a key.
var KeySlot = keySlot
