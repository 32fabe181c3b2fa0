//go:build !linux

package main

import (
	"os"
	"syscall"
)

// childAttr puts the command in the process group pgid (the watcher's),
// or in a group of its own when pgid is 0, so that signals and a lost lock
// reach everything it started. Outside Linux the command is not given the
// terminal (tty is ignored), and only the watcher process stops it if
// redislock is killed with SIGKILL.
func childAttr(pgid, tty int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
}

// foregroundTerminal returns -1: outside Linux the command is not given
// the terminal.
func foregroundTerminal() int { return -1 }

// giveTerminal is not supported outside Linux.
func giveTerminal(tty, pgid int) error { return syscall.ENOTSUP }

// reclaimTerminal does nothing outside Linux.
func reclaimTerminal(tty, pgid int) {}

// ignoreTTOU does nothing outside Linux.
func ignoreTTOU() {}

// watchStops returns at once outside Linux: stops are not watched.
func watchStops(pid int, stops chan<- syscall.Signal, done <-chan struct{}) {}

// selfExe is the path under which redislock re-executes itself.
func selfExe() (string, error) { return os.Executable() }
