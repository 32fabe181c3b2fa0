package main

import (
	"errors"
	"os/exec"
	"syscall"
)

// Exit statuses of redislock. "run" otherwise exits with the status of its
// command: the command's own exit code, or 128+N when a signal N killed it,
// as shells report it.
const (
	exitOK = 0
	// exitFailure: redislock failed on its own side: a URL that does not
	// parse, a file it cannot read (--password-file, --tls-*), a failure of
	// the system (waiting for COMMAND).
	exitFailure = 1
	exitUsage   = 2 // a bad flag, a missing argument

	// exitUnavailable: Redis could not be used: unreachable, TLS or
	// authentication refused, a Redis error, a reply that is not Redis's.
	// It is EX_UNAVAILABLE of sysexits.h; --redis-error-exit-code changes
	// it. (A job exits 1 often: Redis failing must not look like it.)
	exitUnavailable = 69

	// exitNotHeld: "release" found the lock not held with the given token
	// (gone, or held by another).
	exitNotHeld = 3

	// exitConflict: "run" did not obtain the lock within --wait. It is
	// EX_TEMPFAIL of sysexits.h ("try again later"); --conflict-exit-code
	// changes it.
	exitConflict = 75

	// exitLost: "run" lost the lock while its command ran. It is
	// EX_PROTOCOL of sysexits.h.
	exitLost = 76

	// exitCannotRun and exitNotFound: "run" could not start its command,
	// as env(1), nohup(1) and timeout(1) report it.
	exitCannotRun = 126
	exitNotFound  = 127

	// exitSignal + N: the command was killed by signal N, or "run" was
	// interrupted by signal N while it waited for the lock.
	exitSignal = 128
)

// exitStatus returns the exit status that a shell would report for a
// command that ended with err, the error of [exec.Cmd.Wait]: 0 for nil,
// the exit code, or 128+N for a command killed by signal N. ok is false
// when err does not come from the command's exit.
func exitStatus(err error) (status int, ok bool) {
	if err == nil {
		return exitOK, true
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 0, false
	}
	if ws, isWait := ee.Sys().(syscall.WaitStatus); isWait && ws.Signaled() {
		return exitSignal + int(ws.Signal()), true
	}
	return ee.ExitCode(), true
}
