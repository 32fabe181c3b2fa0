package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// watcherArg is the hidden first argument with which redislock runs as
// the watcher of a command's process group (see startWatcher).
const watcherArg = "__redislock-watch-group"

// init turns the process into the watcher when it was started as one,
// before anything else runs. It is here rather than in main so that any
// binary that contains the run command, a test binary among them, serves
// as its own watcher: re-executed with watcherArg, a test binary would
// otherwise run its tests again, and those would start watchers of their
// own, without end.
func init() {
	if len(os.Args) == 2 && os.Args[1] == watcherArg {
		os.Exit(watcherMain())
	}
}

// watcher is the process that kills the command's process group if
// redislock dies while the command may run: redislock holds the write end
// of a pipe whose read end the watcher reads, and the kernel closes it
// when redislock dies, however it dies.
//
// The command's process group is the watcher's own: the watcher is
// started first, in a new process group, and the command joins it. So the
// group is known to the watcher before the command runs, and no moment is
// left in which the command could start processes that a death of
// redislock would not reach. Once the command has started, the watcher
// moves into redislock's process group: the command's group holds the
// command and what it started only.
type watcher struct {
	cmd  *exec.Cmd
	pipe *os.File // the write end
}

// startWatcher starts the watcher: redislock itself, in a new process
// group whose id, [watcher.pgid], the command must join (see childAttr),
// with stderr for its one message. It does not wait for it.
func startWatcher(stderr io.Writer) (*watcher, error) {
	exe, err := selfExe()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, watcherArg) //nolint:gosec // redislock itself, from /proc/self/exe
	cmd.Args[0] = "redislock"            // as ps shows it
	cmd.ExtraFiles = []*os.File{r}       // fd 3
	if f, ok := stderr.(*os.File); ok {
		cmd.Stderr = f
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	_ = r.Close() // the watcher's now; redislock keeps the write end only
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	return &watcher{cmd: cmd, pipe: w}, nil
}

// pgid returns the process group the command is to join: the watcher's.
// A nil watcher returns 0: the command makes a group of its own.
func (w *watcher) pgid() int {
	if w == nil {
		return 0
	}
	return w.cmd.Process.Pid
}

// started tells the watcher that the command runs in its group, which it
// may leave now.
func (w *watcher) started() {
	if w == nil {
		return
	}
	_, _ = io.WriteString(w.pipe, "started\n") // a watcher that died cannot be told; nothing else to do
}

// disarm tells the watcher to exit without killing anything, and waits for
// it. A nil watcher does nothing.
func (w *watcher) disarm() {
	if w == nil {
		return
	}
	_, _ = io.WriteString(w.pipe, "done\n") // as in started
	_ = w.pipe.Close()
	_ = w.cmd.Wait() // its exit status says nothing more
}

// watcherMain is redislock run as the watcher, in a process group of its
// own, G, which the command joins: it reads the pipe on fd 3 to its end.
// "started" means the command runs in G: the watcher moves to the process
// group of redislock. "done" means redislock finished with G. The pipe
// closing before "done" means redislock died: G gets SIGKILL. It returns
// the exit code.
func watcherMain() int {
	// Signals for redislock's group or the command's, from a terminal or
	// forwarded, are not for the watcher: it ends when the pipe does.
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGUSR2,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	group := os.Getpid()
	parentGroup, err := syscall.Getpgid(os.Getppid())
	if err != nil {
		parentGroup = 0
	}
	in := bufio.NewReader(os.NewFile(3, "redislock-pipe"))
	for {
		line, err := in.ReadString('\n')
		switch {
		case line == "started\n":
			if parentGroup > 0 {
				_ = syscall.Setpgid(0, parentGroup) // staying in G only makes G look busy longer
			}
			continue
		case line == "done\n":
			return 0
		case err == nil:
			continue // nothing else is sent
		}
		break // EOF: redislock died
	}
	if syscall.Getpgrp() != group && !groupAlive(group) {
		return 0 // the command and all it started had ended
	}
	fmt.Fprintf(os.Stderr, "redislock run: died while its command ran; killing the command's process group %d (SIGKILL)\n", group)
	if err := signalGroup(group, syscall.SIGKILL); err != nil { // kills the watcher too while it is in G
		fmt.Fprintf(os.Stderr, "redislock run: cannot kill process group %d: %v\n", group, err)
		return 1
	}
	return 0
}
