//go:build !linux

package main

import "syscall"

// childAttr puts the command in a process group of its own, whose id is its
// pid, so that signals and a lost lock reach everything it started. Outside
// Linux nothing stops the command if redislock is killed with SIGKILL.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
