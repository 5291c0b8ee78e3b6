//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// account is a user a job runs as, from the passwd and group databases.
type account struct {
	Name     string
	UID      uint32
	GID      uint32
	Groups   []uint32 // supplementary groups
	Home     string
	setCreds bool // the daemon runs as root and sets the credentials
}

// resolveUser looks name up for a job of a system crontab. When the daemon
// runs as root the job will run as that user; otherwise name must be the
// daemon's own user, since nothing else can be honoured.
func resolveUser(name string) (*account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		if _, numeric := strconv.ParseUint(name, 10, 32); numeric == nil {
			return nil, fmt.Errorf("user %q: no such user on this machine (the user column takes a name, as cron's does, not a user ID)", name)
		}
		return nil, fmt.Errorf("user %q: no such user on this machine", name)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %q: uid %q or gid %q is not a number", name, u.Uid, u.Gid)
	}
	a := &account{Name: u.Username, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}
	euid := os.Geteuid()
	if euid != 0 {
		if uint32(euid) != a.UID {
			return nil, fmt.Errorf("the line runs as user %q but anarchon runs as uid %d, not root: run anarchon as root, or as %q", name, euid, name)
		}
		return a, nil
	}
	a.setCreds = true
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("user %q: groups: %v", name, err)
	}
	for _, s := range ids {
		g, err := strconv.ParseUint(s, 10, 32)
		if err == nil {
			a.Groups = append(a.Groups, uint32(g))
		}
	}
	return a, nil
}

// runAs makes cmd run as j's account: credentials (when the daemon is
// root) and, as cron sets them, HOME (unless the crontab set it), USER,
// LOGNAME and SHELL (the shell running the command, unless the crontab set
// it), and the home directory as working directory. It is called after
// cmd.Env and cmd.SysProcAttr are set.
func runAs(cmd *exec.Cmd, j *jobSpec) {
	a := j.account
	if a == nil {
		return
	}
	if a.setCreds {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: a.UID, Gid: a.GID, Groups: a.Groups}
	}
	set := func(key string) bool {
		for _, kv := range j.Env {
			if strings.HasPrefix(kv, key+"=") {
				return true
			}
		}
		return false
	}
	home := a.Home
	if !set("HOME") {
		cmd.Env = append(cmd.Env, "HOME="+a.Home)
	} else {
		home = envValue(j.Env, "HOME")
	}
	if cmd.Dir == "" {
		// As cron: the command starts in the home directory, or in / when
		// there is none (nobody's /nonexistent).
		cmd.Dir = "/"
		if fi, err := os.Stat(home); err == nil && fi.IsDir() {
			cmd.Dir = home
		}
	}
	if !set("SHELL") {
		cmd.Env = append(cmd.Env, "SHELL="+j.Argv[0])
	}
	cmd.Env = append(cmd.Env, "USER="+a.Name, "LOGNAME="+a.Name)
}
