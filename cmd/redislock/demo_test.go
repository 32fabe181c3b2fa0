package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

func TestDemo(t *testing.T) {
	srv := miniredisServer(miniredis.RunT(t))
	ctx, cancel := context.WithTimeout(context.Background(), demoTimeout)
	defer cancel()

	var out bytes.Buffer
	began := time.Now()
	if err := demo(ctx, &out, srv); err != nil {
		t.Fatalf("demo: %v\noutput:\n%s", err, out.String())
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("demo took %v, want a few seconds at most", took)
	}

	got := out.String()
	if first, _, _ := strings.Cut(got, "\n"); !strings.Contains(first, "miniredis") {
		t.Errorf("first line = %q, want it to name the miniredis in use", first)
	}
	for _, want := range []string{
		"worker-1  obtained demo:job:lock",
		"worker-2  obtained demo:job:lock",
		"worker-3  obtained demo:job:lock",
		"worker-4  gave up",
		"worker-5  gave up",
		"context deadline exceeded",
		`accepted write "balance=100" from worker-A`,
		`accepted write "balance=40" from worker-B`,
		`refused stale write "balance=100" from worker-A`,
		"Refresh: redislock: not obtained",
		"Release: redislock: lock not held",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q\noutput:\n%s", want, got)
		}
	}
	if t.Failed() {
		return
	}
	// The fencing act reads in this order, whatever the timing.
	last := -1
	for _, want := range []string{"worker-A  obtained", "worker-B  obtained", "refused stale write", "Refresh:", "Release:"} {
		i := strings.Index(got, want)
		if i < last {
			t.Errorf("%q comes before an earlier step of the fencing act\noutput:\n%s", want, got)
		}
		last = i
	}
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
		{args: []string{"demo", "--bogus"}, code: 2, stderr: "flag provided but not defined", noStdout: true},
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
