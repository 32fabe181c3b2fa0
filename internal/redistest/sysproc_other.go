//go:build !linux

package redistest

import "syscall"

// sysProcAttr puts a child in its own process group. Without Linux's
// Pdeathsig nothing kills a child when the test binary dies abruptly (a
// -timeout panic, SIGKILL): only [Run] and Cleanup stop servers there.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
