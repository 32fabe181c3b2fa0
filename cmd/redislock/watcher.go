package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// watcherArg is the hidden first argument with which redislock runs as
// the watcher of a command's process group (see startWatcher).
const watcherArg = "__redislock-watch-group"

// watcher is the process that kills the command's process group if
// redislock dies while the command may run: redislock holds the write end
// of a pipe whose read end the watcher reads, and the kernel closes it
// when redislock dies, however it dies.
type watcher struct {
	cmd  *exec.Cmd
	pipe *os.File // the write end
}

// startWatcher starts the watcher: redislock itself, in a process group
// of its own (so that signals for redislock's group or the command's, from
// a terminal say, do not reach it), with stderr for its one message. It
// does not wait for it. Tell it the group to watch with arm.
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

// arm tells the watcher the process group to kill if redislock dies.
func (w *watcher) arm(pgid int) {
	if w == nil {
		return
	}
	_, _ = fmt.Fprintf(w.pipe, "%d\n", pgid) // a watcher that died cannot be told; nothing else to do
}

// disarm tells the watcher to exit without killing anything, and waits for
// it. A nil watcher does nothing.
func (w *watcher) disarm() {
	if w == nil {
		return
	}
	_, _ = io.WriteString(w.pipe, "done\n") // as in arm
	_ = w.pipe.Close()
	_ = w.cmd.Wait() // its exit status says nothing more
}

// watcherMain is redislock run as the watcher: it reads the process group
// to watch from fd 3, then waits for the end of the pipe. "done" first
// means redislock finished with the group; the pipe closing without it
// means redislock died, and the group gets SIGKILL. It returns the exit
// code.
func watcherMain() int {
	// Terminal signals are not for it; it ends when the pipe does.
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	in := bufio.NewReader(os.NewFile(3, "redislock-pipe"))
	line, err := in.ReadString('\n')
	if err != nil {
		return 0 // redislock ended before starting a command
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pgid <= 1 {
		return 2
	}
	rest, _ := io.ReadAll(in) // until redislock closes the pipe or dies
	if string(rest) == "done\n" {
		return 0
	}
	if !groupAlive(pgid) {
		return 0 // the command and all it started had ended
	}
	if err := signalGroup(pgid, syscall.SIGKILL); err != nil {
		_, _ = fmt.Fprintf(os.Stderr, "redislock run: died while its command ran; cannot kill the command's process group %d: %v\n", pgid, err)
		return 1
	}
	_, _ = fmt.Fprintf(os.Stderr, "redislock run: died while its command ran; the command's process group %d was killed (SIGKILL)\n", pgid)
	return 0
}
