package main

import (
	"errors"
	"os"
	"os/signal"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// childAttr puts the command in the process group pgid (the watcher's,
// see [watcher]), or in a group of its own whose id is its pid when pgid
// is 0, so that signals and a lost lock reach everything it started; gives
// that group the terminal tty (a descriptor of redislock), unless tty is
// -1; and has the kernel send the command SIGKILL if redislock dies without
// stopping it (killed with SIGKILL, a crash), since nothing keeps its lock
// alive then. The kernel sends that signal when the thread that started the
// command exits: "run" locks its goroutine to that thread until the command
// has exited. (The watcher covers the rest of the group.)
func childAttr(pgid, tty int) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pgid: pgid, Pdeathsig: syscall.SIGKILL}
	if tty >= 0 {
		a.Foreground, a.Ctty = true, tty
	}
	return a
}

// foregroundTerminal returns the first of redislock's stdin, stdout and
// stderr that is a terminal whose foreground process group is redislock's
// own, or -1: a command started then may be given that terminal.
func foregroundTerminal() int {
	own := unix.Getpgrp()
	for _, f := range []*os.File{os.Stdin, os.Stdout, os.Stderr} {
		fd := int(f.Fd())
		if pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil && pgrp == own {
			return fd
		}
	}
	return -1
}

// giveTerminal makes pgid the foreground process group of the terminal
// tty, from redislock, which holds it.
func giveTerminal(tty, pgid int) error {
	return unix.IoctlSetPointerInt(tty, unix.TIOCSPGRP, pgid)
}

// reclaimTerminal makes redislock's process group the foreground group of
// the terminal tty again, if pgid (the command's) still has it: nobody
// else took it meanwhile. redislock is in the background then, which the
// kernel signals with SIGTTOU unless it is ignored: it is, from the start
// of the command on (see ignoreTTOU).
func reclaimTerminal(tty, pgid int) {
	if fg, err := unix.IoctlGetInt(tty, unix.TIOCGPGRP); err != nil || fg != pgid {
		return
	}
	_ = unix.IoctlSetPointerInt(tty, unix.TIOCSPGRP, unix.Getpgrp()) // nothing to do if it fails: the shell takes it back
}

// ignoreTTOU ignores SIGTTOU in redislock, once its command has started
// (the command does not inherit it then): redislock, in the background
// while its command has the terminal, may still write its messages there
// and take the terminal back.
func ignoreTTOU() { signal.Ignore(syscall.SIGTTOU) }

// watchStops sends on stops the signal that stopped the process pid, a
// child of redislock, each time it stops, until it is reaped (by
// [exec.Cmd.Wait], elsewhere) or done is closed. It blocks: run it on a
// goroutine of its own. It never reaps the process: it waits for stops only.
func watchStops(pid int, stops chan<- syscall.Signal, done <-chan struct{}) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return // ECHILD: reaped
		}
		if info.Code != cldStopped {
			continue
		}
		select {
		case stops <- syscall.Signal(stopStatus(&info)):
		case <-done:
			return
		}
	}
}

// cldStopped is the si_code of a child stopped by a signal (CLD_STOPPED).
const cldStopped = 5

// stopStatus returns si_status of a SIGCHLD siginfo: the signal that
// stopped the child. x/sys/unix does not name the field: it follows si_pid
// and si_uid (two 32-bit words) at the start of the union, which starts at
// the first pointer-aligned offset after the three 32-bit words of the
// header.
func stopStatus(info *unix.Siginfo) int32 {
	const ptr = unsafe.Sizeof(uintptr(0))
	union := (3*4 + ptr - 1) &^ (ptr - 1)
	return *(*int32)(unsafe.Add(unsafe.Pointer(info), union+8)) //nolint:gosec // reads a field of a kernel struct x/sys/unix leaves unnamed
}

// selfExe is the path under which redislock re-executes itself (the
// watcher): the running binary even if its file was replaced meanwhile.
func selfExe() (string, error) { return "/proc/self/exe", nil }
