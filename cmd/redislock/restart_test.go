package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redislock/redislock/internal/redistest"
)

// TestRunServerRestart: Redis killed and restarted empty (no persistence)
// under a running job. The job's run sees its connection break, checks its
// lock the moment the server answers again, finds it gone and stops the
// job (SIGTERM, exit 76), long before the first refresh (at TTL/3, a
// minute in) would have found it. A second run, one that was waiting for
// the lock through the restart or one started just after it, obtains the
// lock, and starts its command only after the first command got its
// SIGTERM.
func TestRunServerRestart(t *testing.T) {
	t.Parallel()
	for _, second := range []string{"waiting", "started-after"} {
		t.Run(second, func(t *testing.T) {
			t.Parallel()
			srv := redistest.NewServer(t, redistest.Redis)
			rdb := srv.Client(t)
			conn := []string{"--redis", "redis://" + srv.Addr()}
			key := redistest.Key(t, "lock")
			dir := t.TempDir()
			signalled, started := filepath.Join(dir, "signalled"), filepath.Join(dir, "started")

			// No refresh comes within procTimeout: only the restart, seen,
			// can stop the command in time for the test.
			env, a := runArgs(conn, []string{"--ttl", "3m", "-v"}, key, "trap", signalled)
			first := start(t, env, a...)
			parseEnvLine(t, first)
			first.expect("ready")

			env, b := runArgs(conn, []string{"--wait", "1m", "-v"}, key, "stamp", started)
			var next *proc
			if second == "waiting" {
				next = start(t, env, b...)
				queue := key + ":redislock:waiters"
				pollUntil(t, "the second run to queue in "+queue, func() bool { return exists(t, rdb, queue) })
			}
			srv.Restart(t)
			answered := time.Now().UnixNano() // the harness saw PING answered
			if next == nil {
				next = start(t, env, b...)
			}
			if got := first.line(); got != "got SIGTERM" {
				t.Fatalf("first command printed %q, want %q", got, "got SIGTERM")
			}
			if code := first.wait(); code != exitLost {
				t.Errorf("first run: exit %d, want %d; stderr: %s", code, exitLost, first.stderr)
			}
			if stderr := first.stderr.String(); !strings.Contains(stderr, "restarted") || !strings.Contains(stderr, "lost the lock "+key) {
				t.Errorf("first run's stderr = %q, want it to tell of the restart and the lost lock", stderr)
			}
			if code := next.wait(); code != 0 {
				t.Fatalf("second run: exit %d, want 0; stderr: %s", code, next.stderr)
			}
			stopped, begun := readStamps(t, signalled), readStamps(t, started)
			if len(stopped) != 1 || len(begun) != 1 {
				t.Fatalf("%d stamps of the first command's signal, %d of the second's start; want 1 each", len(stopped), len(begun))
			}
			if stopped[0] >= begun[0] {
				t.Errorf("the second command started %.1f ms before the first one was signalled\nfirst: %s\nsecond: %s", float64(stopped[0]-begun[0])/1e6, first.stderr, next.stderr)
			} else {
				t.Logf("the first command got SIGTERM %.1f ms after the harness saw the server answer again; the second command started %.1f ms after that SIGTERM",
					float64(stopped[0]-answered)/1e6, float64(begun[0]-stopped[0])/1e6)
			}
		})
	}
}

// TestRunConnectionBroken: the run's connections killed (CLIENT KILL) while
// the server stays up: the run checks its lock as soon as it reconnects,
// finds it still held, says so (-v) and lets the command run on.
func TestRunConnectionBroken(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Redis)
	rdb := srv.Client(t)
	key := redistest.Key(t, "lock")
	env, a := runArgs([]string{"--redis", "redis://" + srv.Addr()}, []string{"--ttl", "3m", "-v"}, key, "hold", "0")
	p := start(t, env, a...)
	parseEnvLine(t, p)
	p.expect("ready")
	if err := rdb.Do(context.Background(), "CLIENT", "KILL", "TYPE", "normal").Err(); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "the run to check its lock after the broken connection", func() bool {
		return strings.Contains(p.stderr.String(), key+" is still held")
	})
	if !p.running() {
		t.Fatalf("the run exited %d; stderr: %s", p.wait(), p.stderr)
	}
	_ = p.stdin.Close()
	if code := p.wait(); code != 0 {
		t.Errorf("exit %d, want 0; stderr: %s", code, p.stderr)
	}
}

// TestRunServerRestartCluster: on a Cluster, the master of KEY's slot
// killed and restarted empty (before any failover) under a running job:
// the run watches that node, sees it restart and stops the job at once.
func TestRunServerRestartCluster(t *testing.T) {
	t.Parallel()
	c := redistest.NewCluster(t, redistest.Redis)
	key := redistest.Key(t, "lock")
	conn := []string{"--cluster", "--redis", strings.Join(c.Addrs(), ",")}
	env, a := runArgs(conn, []string{"--ttl", "3m"}, key, "trap")
	p := start(t, env, a...)
	parseEnvLine(t, p)
	p.expect("ready")
	c.MasterForKey(t, key).Restart(t)
	if got := p.line(); got != "got SIGTERM" {
		t.Fatalf("command printed %q, want %q", got, "got SIGTERM")
	}
	if code := p.wait(); code != exitLost {
		t.Errorf("exit %d, want %d; stderr: %s", code, exitLost, p.stderr)
	}
	if stderr := p.stderr.String(); !strings.Contains(stderr, "restarted") {
		t.Errorf("stderr = %q, want it to tell of the restart", stderr)
	}
}
