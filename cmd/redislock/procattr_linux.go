package main

import "syscall"

// childAttr puts the command in a process group of its own, whose id is its
// pid, so that signals and a lost lock reach everything it started; and has
// the kernel send it SIGKILL if redislock dies without stopping it (killed
// with SIGKILL, a crash), since nothing keeps its lock alive then. The
// kernel sends that signal when the thread that started the command exits:
// "run" locks its goroutine to that thread until the command has exited.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
