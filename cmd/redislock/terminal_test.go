package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"
	"github.com/redislock/redislock/internal/redistest"
)

// terminal is redislock started on a pseudo-terminal, as from a shell:
// the session leader, in the foreground process group of its terminal.
type terminal struct {
	t      *testing.T
	cmd    *exec.Cmd
	ptmx   *os.File
	out    *syncBuffer // all the terminal shows: stdout, stderr and echo
	exited chan struct{}
	code   int
}

func startTerminal(t *testing.T, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command(binary, args...) //nolint:gosec // the binary under test
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	ptmx, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, cmd: cmd, ptmx: ptmx, out: &syncBuffer{}, exited: make(chan struct{})}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		// Reading ends with EIO once every process has closed the terminal.
		if _, err := io.Copy(term.out, ptmx); err != nil && !errors.Is(err, syscall.EIO) {
			_, _ = term.out.Write([]byte("\n[read: " + err.Error() + "]")) // a syncBuffer does not fail
		}
	}()
	go func() {
		_ = cmd.Wait()
		term.code = cmd.ProcessState.ExitCode()
		close(term.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-term.exited:
		default:
			_ = cmd.Process.Kill()
			<-term.exited
		}
		_ = ptmx.Close()
		<-copied
	})
	return term
}

// waitFor waits until the terminal shows want.
func (term *terminal) waitFor(want string) {
	term.t.Helper()
	pollUntil(term.t, "the terminal to show "+want+"; it shows "+term.out.String(), func() bool {
		return strings.Contains(term.out.String(), want)
	})
}

// typeIn writes s as if typed on the terminal.
func (term *terminal) typeIn(s string) {
	term.t.Helper()
	if _, err := term.ptmx.Write([]byte(s)); err != nil {
		term.t.Fatal(err)
	}
}

// wait waits for redislock to exit and returns its exit code.
func (term *terminal) wait() int {
	term.t.Helper()
	pollUntil(term.t, "redislock on the terminal to exit; it shows "+term.out.String(), func() bool {
		select {
		case <-term.exited:
			return true
		default:
			return false
		}
	})
	return term.code
}

// TestRunTerminal: from a terminal, the command gets the terminal while it
// runs: it reads an answer; Ctrl-C reaches it (and the lock is released);
// Ctrl-Z does not leave it stopped with the lock held.
func TestRunTerminal(t *testing.T) {
	t.Parallel()
	conn, rdb := topologies[0].conn(t)
	ask := `printf "Proceed? "; read ans; echo "got $ans"`
	for _, tc := range []struct {
		name  string
		keys  string // typed after the prompt
		after string // then typed, once the terminal shows wait
		wait  string
		want  string
		code  int
	}{
		{name: "read", keys: "yes\r", want: "got yes", code: 0},
		{name: "ctrl-c", keys: "\x03", code: exitSignal + int(syscall.SIGINT)},
		{name: "ctrl-z", keys: "\x1a", wait: "continuing it", after: "later\r", want: "got later", code: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key := redistest.Key(t, "lock")
			term := startTerminal(t, args("run", conn, key, "--", "sh", "-c", ask)...)
			term.waitFor("Proceed? ")
			term.typeIn(tc.keys)
			if tc.wait != "" {
				term.waitFor(tc.wait)
				term.typeIn(tc.after)
			}
			if tc.want != "" {
				term.waitFor(tc.want)
			}
			if code := term.wait(); code != tc.code {
				t.Errorf("exit %d, want %d; terminal:\n%s", code, tc.code, term.out)
			}
			if exists(t, rdb, key) {
				t.Errorf("%s still held after the run", key)
			}
		})
	}
}
