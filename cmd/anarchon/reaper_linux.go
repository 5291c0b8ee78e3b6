//go:build linux

package main

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

// children tracks the commands the executor starts, so the reaper never
// waits for one of them: their exec.Cmd.Wait must get their status. mu is
// held from before fork until the child is in the set, and while the
// reaper scans, so a child that exits at once is never taken for an orphan.
var children = struct {
	sync.Mutex
	own map[int]bool
}{own: map[int]bool{}}

// startChild starts cmd and tracks it until childDone.
func startChild(cmd *exec.Cmd) error {
	children.Lock()
	defer children.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	children.own[cmd.Process.Pid] = true
	return nil
}

// pfForkNoExec is the kernel's PF_FORKNOEXEC task flag (linux/sched.h):
// the process was forked and has not exec'd yet. exec clears it.
const pfForkNoExec = 0x40

// diedBeforeExec reports whether cmd, which Start has just returned from
// without error, died before it ran its program, and then waits for it and
// returns Wait's error ("signal: interrupt"). Start returns once the child
// has exec'd or has exited: a child still marked PF_FORKNOEXEC has exited
// (or is exiting) without running anything. That happens when a signal sent
// to the daemon's process group (Ctrl-C at a terminal, kill -INT -PGID)
// reaches a child in the instant after fork, before it moved to a group of
// its own: the child holds the signal blocked until it has reset the
// daemon's handlers, and it then kills it. The command never ran, so it can
// be started again. A child whose flags cannot be read is taken to have
// run.
func diedBeforeExec(cmd *exec.Cmd) (bool, error) {
	flags, ok := procFlags(cmd.Process.Pid)
	if !ok || flags&pfForkNoExec == 0 {
		return false, nil
	}
	err := cmd.Wait()
	childDone(cmd.Process.Pid)
	return true, err
}

// procFlags reads the kernel flags of pid from /proc/PID/stat, also for a
// zombie.
func procFlags(pid int) (uint64, bool) {
	f, ok := procStatFields(pid)
	if !ok || len(f) < 7 {
		return 0, false
	}
	flags, err := strconv.ParseUint(string(f[6]), 10, 64)
	return flags, err == nil
}

// childDone forgets a command whose Wait returned.
func childDone(pid int) {
	children.Lock()
	delete(children.own, pid)
	children.Unlock()
}

// startReaper makes the daemon reap orphaned processes, as an init must:
// always when it is PID 1, and when asked (subreaper) after making itself
// the child subreaper of its descendants with prctl. It returns a function
// that stops the reaper; it returns nil and does nothing otherwise.
func startReaper(log *slog.Logger, subreaper bool) (stop func(), err error) {
	pid1 := os.Getpid() == 1
	if !pid1 && !subreaper {
		return nil, nil
	}
	if !pid1 {
		if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
			return nil, os.NewSyscallError("prctl(PR_SET_CHILD_SUBREAPER)", errno)
		}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		// SIGCHLD signals coalesce; a slow tick catches any lost one.
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-sigs:
			case <-tick.C:
			case <-quit:
				return
			}
			if n := reapOrphans(); n > 0 {
				log.Debug("reaped orphaned processes", slog.Int("count", n))
			}
		}
	}()
	log.Info("reaping orphaned processes", slog.Bool("pid1", pid1), slog.Bool("subreaper", !pid1))
	return func() {
		signal.Stop(sigs)
		close(quit)
		<-done
	}, nil
}

// reapOrphans waits for every zombie child of this process that is not a
// tracked command and returns how many it reaped. It reads the children
// from /proc rather than calling wait4(-1), which would steal the exit
// status of the executor's own commands from exec.Cmd.Wait.
func reapOrphans() int {
	children.Lock()
	defer children.Unlock()
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || children.own[pid] {
			continue
		}
		ppid, state, ok := procStat(pid)
		if !ok || ppid != self || state != 'Z' {
			continue
		}
		var ws syscall.WaitStatus
		for {
			got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if got == pid {
				n++
			}
			break
		}
	}
	return n
}

// procStat reads the parent and state of pid from /proc/PID/stat.
func procStat(pid int) (ppid int, state byte, ok bool) {
	f, ok := procStatFields(pid)
	if !ok || len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	return ppid, f[0][0], err == nil
}

// procStatFields returns the fields of /proc/PID/stat after the command
// name: state, ppid, pgrp, session, tty_nr, tpgid, flags, …
func procStatFields(pid int) ([][]byte, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	// "pid (comm) S ppid …": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+4 > len(data) {
		return nil, false
	}
	return bytes.Fields(data[i+1:]), true
}

// groupMembersLive reports whether a process of group pgid other than a
// zombie exists. A zombie counts as a member for kill(2) until its parent
// reaps it, which for an orphan is init's business and may take a while
// (or, under an init that does not reap, forever); it runs nothing.
func groupMembersLive(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell: as kill(2) says
	}
	want := []byte(strconv.Itoa(pgid))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, ok := procStatFields(pid)
		if ok && len(f) > 2 && bytes.Equal(f[2], want) && !bytes.Equal(f[0], []byte("Z")) {
			return true
		}
	}
	return false
}
