package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/redislock/redislock/internal/redistest"
)

// readStamps returns the Unix-nanosecond times, one a line, of file.
func readStamps(t testing.TB, file string) []int64 {
	t.Helper()
	b, err := os.ReadFile(file) //nolint:gosec // a file of the test's own
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, l := range strings.Fields(string(b)) {
		n, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			continue // a line cut short by SIGKILL
		}
		out = append(out, n)
	}
	return out
}

// TestRunCutStopsBeforeExpiry: with Redis cut off from the holder, its
// command, even one that ignores SIGTERM, is dead before the lease can
// expire: a second "run --wait" that takes the lock at its expiry starts
// its command after the first command's last sign of life.
func TestRunCutStopsBeforeExpiry(t *testing.T) {
	t.Parallel()
	srv := redistest.SharedServer(t, redistest.Redis)
	rdb := srv.Client(t)
	proxy := newProxy(t, redistest.FreeAddr(t), srv.Addr())
	key := redistest.Key(t, "lock")
	dir := t.TempDir()
	beats, started := filepath.Join(dir, "a"), filepath.Join(dir, "b")

	env, a := runArgs([]string{"--redis", "redis://" + proxy.Addr()}, []string{"--ttl", "1s", "--grace", "200ms"}, key, "heartbeat", beats)
	first := start(t, env, a...)
	parseEnvLine(t, first)
	first.expect("ready")

	env, b := runArgs([]string{"--redis", "redis://" + srv.Addr()}, []string{"--wait", "15s"}, key, "stamp", started)
	second := start(t, env, b...)
	queue := key + ":redislock:waiters"
	pollUntil(t, "the second run to queue in "+queue, func() bool { return exists(t, rdb, queue) })

	proxy.Cut()
	if code := second.wait(); code != 0 {
		t.Fatalf("second run: exit %d, want 0; stderr: %s", code, second.stderr)
	}
	if code := first.wait(); code != exitLost {
		t.Errorf("first run: exit %d, want %d; stderr: %s", code, exitLost, first.stderr)
	}
	stderr := first.stderr.String()
	for _, want := range []string{"could not renew the lock " + key, "SIGTERM now", "SIGKILL"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("first run's stderr = %q, want it to contain %q", stderr, want)
		}
	}
	alive := readStamps(t, beats)
	begun := readStamps(t, started)
	if len(alive) == 0 || len(begun) != 1 {
		t.Fatalf("%d heartbeats of the first command, %d starts of the second; want some and 1", len(alive), len(begun))
	}
	if last := alive[len(alive)-1]; last >= begun[0] {
		t.Errorf("the first command was alive %.1f ms after the second started: the jobs overlapped", float64(last-begun[0])/1e6)
	} else {
		t.Logf("the second command started %.1f ms after the first one's last heartbeat", float64(begun[0]-last)/1e6)
	}
}

// TestRunSignalStoppedCommand: the SIGTERM sent to a stopped command,
// forwarded or for a lost lock, is followed by SIGCONT, so the command
// acts on it.
func TestRunSignalStoppedCommand(t *testing.T) {
	t.Parallel()
	conn, rdb := topologies[0].conn(t)
	for _, tc := range []struct {
		name string
		stop func(t *testing.T, p *proc, key string) // what makes redislock send SIGTERM
		code int
	}{
		{"forwarded", func(t *testing.T, p *proc, _ string) {
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}, 9},
		{"lost", func(t *testing.T, _ *proc, key string) {
			if err := rdb.Del(context.Background(), key).Err(); err != nil {
				t.Fatal(err)
			}
		}, exitLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key := redistest.Key(t, "lock")
			// exec keeps the shell's pid: the helper's.
			p := start(t, []string{helperEnv + "=trap"}, args("run", conn, "--ttl", "1s", "--grace", "500ms", key, "--", "sh", "-c", `echo "pid $$"; exec "$0"`, os.Args[0])...)
			pid, err := strconv.Atoi(p.expect("pid "))
			if err != nil {
				t.Fatal(err)
			}
			parseEnvLine(t, p)
			p.expect("ready")
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			// redislock tells of the stop once it has seen it.
			pollUntil(t, "redislock to see the command stopped", func() bool {
				return procState(pid) == 'T' && strings.Contains(p.stderr.String(), "stopped by SIGSTOP")
			})
			tc.stop(t, p, key)
			if got := p.line(); got != "got SIGTERM" {
				t.Errorf("command printed %q, want %q", got, "got SIGTERM")
			}
			if code := p.wait(); code != tc.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tc.code, p.stderr)
			}
		})
	}
}

// TestRunKilled: redislock killed with SIGKILL takes with it what its
// command started (a grandchild in the command's process group), through
// the watcher; the lock then expires with nothing left running.
func TestRunKilled(t *testing.T) {
	t.Parallel()
	conn, _ := topologies[0].conn(t)
	key := redistest.Key(t, "lock")
	p := start(t, nil, args("run", conn, key, "--", "sh", "-c", `sleep 30 >/dev/null 2>&1 & echo "grandchild $!"; wait`)...)
	pid, err := strconv.Atoi(p.expect("grandchild "))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "the grandchild to die", func() bool { return procState(pid) == 0 || procState(pid) == 'Z' })
	p.wait()
	if stderr := p.stderr.String(); !strings.Contains(stderr, "died while its command ran") {
		t.Errorf("stderr = %q, want the watcher to tell of the kill", stderr)
	}
}

// procState returns the state letter of the process pid (R, S, T, Z…),
// or 0 when there is no such process.
func procState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) || err != nil {
		return 0
	}
	// pid (comm) S ...: comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0
	}
	return s[i+2]
}
