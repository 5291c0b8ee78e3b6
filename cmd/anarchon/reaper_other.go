//go:build !linux

package main

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
)

// startChild starts cmd.
func startChild(cmd *exec.Cmd) error { return cmd.Start() }

// diedBeforeExec reports false: this platform gives no way to tell a
// command that died before it ran from one that ran (reaper_linux.go).
func diedBeforeExec(*exec.Cmd) (bool, error) { return false, nil }

// childDone does nothing here.
func childDone(int) {}

// startReaper reaps nothing on this platform; as PID 1 or with --subreaper
// it says so.
func startReaper(log *slog.Logger, subreaper bool) (func(), error) {
	if subreaper {
		return nil, errors.New("--subreaper: supported on Linux only")
	}
	if os.Getpid() == 1 {
		log.Warn("running as PID 1 on a system where anarchon cannot reap orphaned processes")
	}
	return nil, nil
}

// groupMembersLive reports true: this platform has no /proc to tell a
// zombie member from a live one, so kill(2)'s answer stands.
func groupMembersLive(int) bool { return true }
