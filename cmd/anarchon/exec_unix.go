//go:build unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcAttrs starts cmd in a process group of its own, whose ID is the
// child's PID, so that stopping a run reaches the shell's children too.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// terminateGroup sends SIGTERM to the process group that p leads.
func terminateGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

// killGroup sends SIGKILL to the process group that p leads.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }

// groupAlive reports whether the process group that p led still has a
// member that is not a zombie (on Linux; elsewhere, any member). A group's
// ID is not reused while it has a member, so the answer is about p's group
// even after p itself was reaped.
func groupAlive(p *os.Process) bool {
	if err := syscall.Kill(-p.Pid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	return groupMembersLive(p.Pid)
}
