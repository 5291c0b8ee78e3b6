//go:build race

package faults_test

// raceEnabled builds the instance binary with the race detector too when
// the tests run with -race.
const raceEnabled = true
