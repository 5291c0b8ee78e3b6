// Package jitter derives the delay of a job's slot from the job's name and
// the slot, so that every instance of a cluster waits the same delay for the
// same slot.
//
// A delay drawn at random by each instance would not do: the first claim
// wins, so the start delay would be the minimum of one draw per instance and
// shrink as instances are added (about Jitter/(n+1) on average for n
// instances). A delay that is a function of (job, slot) is the same on every
// instance, and its distribution over slots is uniform in [0, max) whatever
// the number of instances.
package jitter

import (
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
	"time"
)

// Delay returns the delay in [0, max) of the slot (Unix milliseconds) of the
// named job; 0 when max is not positive. It is a pure function: the same
// arguments give the same delay on every instance, in every version that
// keeps this algorithm (SHA-256 over a fixed layout of the arguments,
// mapped onto [0, max) by a 64×64-bit multiply). seed lets a deployment
// choose a different set of delays for the same names; every instance must
// use the same seed.
func Delay(job string, slotMilli int64, max time.Duration, seed uint64) time.Duration {
	if max <= 0 {
		return 0
	}
	var buf [16]byte
	binary.BigEndian.PutUint64(buf[:8], seed)
	binary.BigEndian.PutUint64(buf[8:], uint64(slotMilli))
	h := sha256.New()
	h.Write(buf[:])
	h.Write([]byte(job)) // last, so its length needs no prefix
	var sum [sha256.Size]byte
	u := binary.BigEndian.Uint64(h.Sum(sum[:0]))
	// The high word of u·max is floor(u·max/2^64): uniform in [0, max) up to
	// a bias below max/2^64.
	hi, _ := bits.Mul64(u, uint64(max))
	return time.Duration(hi)
}
