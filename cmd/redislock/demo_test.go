package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redislock/redislock/internal/redistest"
)

func TestDemo(t *testing.T) {
	t.Parallel()
	srv := miniredisServer(miniredis.RunT(t))
	defer srv.close()
	got := runDemoOn(t, srv)
	if first, _, _ := strings.Cut(got, "\n"); !strings.Contains(first, "miniredis") {
		t.Errorf("first line = %q, want it to name the miniredis in use", first)
	}
	if !strings.Contains(got, "miniredis wakes blocked clients in no fixed order") {
		t.Errorf("output does not say that miniredis does not keep the order of waiters\noutput:\n%s", got)
	}
}

// TestDemoRedis runs the demo against a real redis-server, through the URL
// as "REDIS_URL=… make demo" would: the turns of the first act go round,
// and the demo leaves no key behind.
func TestDemoRedis(t *testing.T) {
	t.Parallel()
	addr := redistest.SharedServer(t, redistest.Redis).Addr()
	srv, err := openServer("redis://" + addr + "/0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.close()
	got := runDemoOn(t, srv)
	if !strings.Contains(got, "0 times a worker took the lock twice running") {
		t.Errorf("on Redis, a worker took the lock twice running while others waited\noutput:\n%s", got)
	}
	if strings.Contains(got, "miniredis") {
		t.Errorf("output mentions miniredis on a real server\noutput:\n%s", got)
	}

	_, tag, _ := strings.Cut(got, "keys {")
	tag, _, _ = strings.Cut(tag, "}")
	if !strings.HasPrefix(tag, "demo-") {
		t.Fatalf("first line does not name the keys' tag\noutput:\n%s", got)
	}
	rdb := redistest.Standalone(t)
	left, err := rdb.Keys(context.Background(), "*"+tag+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("keys left behind by the demo: %q", left)
	}
}

// runDemoOn runs the demo on srv, checks what every act must show, and
// returns the output.
func runDemoOn(t *testing.T, srv *server) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), demoTimeout)
	defer cancel()
	var out bytes.Buffer
	// Bounded by demoTimeout: a demo that hangs fails here.
	if err := demo(ctx, &out, srv); err != nil {
		t.Fatalf("demo: %v\noutput:\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		// 1. fair turns
		"every worker had 3 turns",
		// 2. keep-alive
		"(2.5 TTLs): still held",
		"its work's context is cancelled: redislock: lock lost",
		// 3. fencing
		`accepted write "balance=100" from worker-A`,
		`accepted write "balance=40" from worker-B`,
		`refused stale write "balance=100" from worker-A`,
		"Refresh: redislock: not obtained",
		// 4. redislock run
		"is held by",
		"exit status 75: skipped",
		"redislock run released the lock and exited 0",
		"cleanup: deleted",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q\noutput:\n%s", want, got)
		}
	}
	// The acts and their steps read in this order, whatever the timing.
	last := -1
	for _, want := range []string{"== 1.", "== 2.", "still held", "operator", "cancelled", "== 3.", "worker-A  obtained", "worker-B  obtained", "refused stale write", "Refresh:", "== 4.", "replica-1 $", "replica-2 $", "exit status 75", "replica-1 sleep 1 finished", "cleanup:"} {
		i := strings.Index(got, want)
		if i < last {
			t.Errorf("%q comes before an earlier step\noutput:\n%s", want, got)
		}
		last = i
	}
	return got
}

func TestLedger(t *testing.T) {
	var l ledger
	for _, tc := range []struct {
		fence int64
		ok    bool
	}{
		{fence: 5, ok: true},
		{fence: 5, ok: true}, // the same holder writes again
		{fence: 9, ok: true},
		{fence: 7, ok: false},
		{fence: 9, ok: true},
	} {
		err := l.write(tc.fence, "v")
		if got := err == nil; got != tc.ok {
			t.Errorf("write with fence %d: err = %v, want accepted = %v", tc.fence, err, tc.ok)
		}
	}
	if _, fence := l.state(); fence != 9 {
		t.Errorf("highest accepted = %d, want 9", fence)
	}
}

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		stdout   string
		stderr   string
		noStdout bool
		noStderr bool
	}{
		{args: nil, code: 2, stderr: "usage: redislock", noStdout: true},
		{args: []string{"nope"}, code: 2, stderr: `unknown command "nope"`, noStdout: true},
		{args: []string{"--help"}, code: 0, stdout: "demo", noStderr: true},
		{args: []string{"demo", "--help"}, code: 0, stdout: "usage: redislock demo", noStderr: true},
		{args: []string{"demo", "--bogus"}, code: 2, stderr: "unknown flag --bogus", noStdout: true},
		{args: []string{"demo", "extra"}, code: 2, stderr: `unexpected argument "extra"`, noStdout: true},
		{args: []string{"demo", "--redis", "nonsense://x"}, code: 1, stderr: "--redis", noStdout: true},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr)
		if code != tc.code {
			t.Errorf("run(%q) = %d, want %d\nstderr: %s", tc.args, code, tc.code, stderr.String())
		}
		if !strings.Contains(stdout.String(), tc.stdout) {
			t.Errorf("run(%q) stdout = %q, want it to contain %q", tc.args, stdout.String(), tc.stdout)
		}
		if !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("run(%q) stderr = %q, want it to contain %q", tc.args, stderr.String(), tc.stderr)
		}
		if tc.noStdout && stdout.Len() > 0 {
			t.Errorf("run(%q) stdout = %q, want nothing", tc.args, stdout.String())
		}
		if tc.noStderr && stderr.Len() > 0 {
			t.Errorf("run(%q) stderr = %q, want nothing", tc.args, stderr.String())
		}
	}
}
