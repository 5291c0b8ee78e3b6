//go:build !unix

package main

import (
	"fmt"
	"os/exec"
)

// account is a user a job runs as; this platform cannot switch users.
type account struct{}

// resolveUser refuses: running a job as another user needs a Unix system.
func resolveUser(name string) (*account, error) {
	return nil, fmt.Errorf("the line runs as user %q: running jobs as another user is supported on Unix only", name)
}

// runAs does nothing on this platform.
func runAs(*exec.Cmd, *jobSpec) {}
