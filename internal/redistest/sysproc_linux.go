package redistest

import "syscall"

// sysProcAttr puts a child in its own process group and has the kernel send
// it SIGKILL when the thread that started it exits (Pdeathsig, Linux only;
// see spawn for why that thread lives as long as the test binary).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
