package redistest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// process is a child process started by the harness. Its own goroutine waits
// for it, so it is always reaped; done is closed when it has exited.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // what Wait returned; read only after done is closed
}

// live holds every process that has not exited yet, so that [Run] can kill
// whatever is left.
var live struct {
	mu    sync.Mutex
	procs map[*process]struct{}
}

// startProcess starts path with args in dir, stdout and stderr going to out.
// The child runs in its own process group (so kill reaches anything it forks)
// and, on Linux, is sent SIGKILL by the kernel when the test binary exits
// (see sysProcAttr and spawn).
func startProcess(path string, args []string, dir string, out *os.File) (*process, error) {
	cmd := exec.Command(path, args...) //nolint:gosec // a server binary the harness located (Flavor.find)
	cmd.Dir = dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = sysProcAttr()
	if err := spawn(cmd); err != nil {
		return nil, fmt.Errorf("redistest: start %s: %w", path, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	live.mu.Lock()
	if live.procs == nil {
		live.procs = make(map[*process]struct{})
	}
	live.procs[p] = struct{}{}
	live.mu.Unlock()
	go func() {
		p.err = cmd.Wait()
		live.mu.Lock()
		delete(live.procs, p)
		live.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has exited (and been reaped).
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL to the process group and blocks until the process has
// been reaped. It does nothing if the process already exited.
func (p *process) kill() {
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// killAll kills every process still alive and waits for them.
func killAll() {
	live.mu.Lock()
	procs := make([]*process, 0, len(live.procs))
	for p := range live.procs {
		procs = append(procs, p)
	}
	live.mu.Unlock()
	for _, p := range procs {
		p.kill()
	}
}

// runTool runs a short-lived command (redis-cli) to completion with args,
// killing its process group when ctx is done, and returns its combined
// output.
func runTool(ctx context.Context, tool command, args ...string) ([]byte, error) {
	var out bytes.Buffer
	path, args := tool.with(args...)
	cmd := exec.CommandContext(ctx, path, args...) //nolint:gosec // a tool the harness located (Flavor.find)
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.SysProcAttr = sysProcAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	if err := spawn(cmd); err != nil {
		return nil, err
	}
	err := cmd.Wait()
	return out.Bytes(), err
}

// The spawner is one goroutine locked to its OS thread that starts every
// child process. The kernel sends a child its Pdeathsig when the thread that
// created it exits, and the Go runtime may end a thread before the process
// does (golang.org/issue/27505); starting every child from one thread that
// lives until stopSpawner makes Pdeathsig fire exactly when the test binary
// exits, or when stopSpawner ends that thread.
var spawner struct {
	mu   sync.Mutex
	reqs chan spawnReq
	done chan struct{}
}

type spawnReq struct {
	cmd   *exec.Cmd
	reply chan error
}

// spawn calls cmd.Start on the spawner's thread, starting the spawner if
// needed. It blocks until Start returns.
func spawn(cmd *exec.Cmd) error {
	spawner.mu.Lock()
	defer spawner.mu.Unlock()
	if spawner.reqs == nil {
		spawner.reqs = make(chan spawnReq)
		spawner.done = make(chan struct{})
		go spawnLoop(spawner.reqs, spawner.done)
	}
	req := spawnReq{cmd: cmd, reply: make(chan error, 1)}
	spawner.reqs <- req
	return <-req.reply
}

func spawnLoop(reqs <-chan spawnReq, done chan<- struct{}) {
	// Never unlocked: when this goroutine returns, its thread exits.
	runtime.LockOSThread()
	defer close(done)
	for req := range reqs {
		req.reply <- req.cmd.Start()
	}
}

// stopSpawner ends the spawner goroutine and its thread, which sends SIGKILL
// to any child still alive. A later spawn starts a new spawner.
func stopSpawner() {
	spawner.mu.Lock()
	defer spawner.mu.Unlock()
	if spawner.reqs == nil {
		return
	}
	close(spawner.reqs)
	<-spawner.done
	spawner.reqs, spawner.done = nil, nil
}
