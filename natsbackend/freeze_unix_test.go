//go:build unix

package natsbackend_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// freeze sends SIGSTOP to p and, where /proc shows it (Linux), returns
// once every thread of p is stopped: kill(2) returns before a thread
// running on another CPU has stopped, and in that moment the server may
// still answer a request the test means to go unanswered.
func freeze(t *testing.T, p *os.Process) {
	t.Helper()
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	dir := "/proc/" + strconv.Itoa(p.Pid) + "/task"
	for deadline := time.Now().Add(10 * time.Second); ; {
		stats, _ := filepath.Glob(dir + "/*/stat")
		stopped := 0
		for _, f := range stats {
			b, err := os.ReadFile(f)
			if err != nil {
				continue // a thread that ended
			}
			// The state follows the command's closing parenthesis.
			if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't') {
				stopped++
			}
		}
		if stopped == len(stats) {
			return // every thread stopped, or no /proc here
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d: %d of %d threads stopped 10 s after SIGSTOP", p.Pid, stopped, len(stats))
		}
		time.Sleep(time.Millisecond)
	}
}
