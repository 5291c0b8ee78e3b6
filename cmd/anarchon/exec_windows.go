//go:build windows

package main

import (
	"os"
	"os/exec"
)

// setProcAttrs leaves cmd as it is: Windows has no process groups that a
// signal can reach, so the daemon handles only the child it started.
func setProcAttrs(*exec.Cmd) {}

// terminateGroup kills p at once: Windows has no SIGTERM that a console
// program can be sent from outside its console, so there is no grace
// period. Processes that p started keep running.
func terminateGroup(p *os.Process) { _ = p.Kill() }

// killGroup kills p (TerminateProcess); its own children keep running.
func killGroup(p *os.Process) { _ = p.Kill() }

// groupAlive reports false: without process groups there is no member to
// wait for once p has exited.
func groupAlive(*os.Process) bool { return false }
