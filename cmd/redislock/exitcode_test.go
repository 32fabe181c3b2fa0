package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/redislock/redislock/internal/redistest"
)

// TestExitUnavailable: Redis unreachable, or answering something that is
// not Redis, exits 69 (EX_UNAVAILABLE) from every command, not 1, which a
// command of "run" may exit with itself; --redis-error-exit-code changes
// it. Every status is listed in --help.
func TestExitUnavailable(t *testing.T) {
	t.Parallel()
	dead := redistest.DeadAddr(t)
	garbage := redistest.ServeTCP(t, func(c net.Conn) {
		_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n")) // a client that cannot be told gets nothing more
		_ = c.Close()
	})
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"run", []string{"run", "--redis", dead, "k", "--", "true"}, exitUnavailable},
		{"run-wait", []string{"run", "--redis", dead, "-w", "0.2", "k", "--", "true"}, exitUnavailable},
		{"run-code", []string{"run", "--redis", dead, "--redis-error-exit-code", "5", "k", "--", "true"}, 5},
		{"run-protocol", []string{"run", "--redis", garbage, "k", "--", "true"}, exitUnavailable},
		{"status", []string{"status", "--redis", dead, "k"}, exitUnavailable},
		{"status-code", []string{"status", "--redis", dead, "--redis-error-exit-code", "0", "k"}, 0},
		{"release", []string{"release", "--redis", dead, "k", "--token", "t"}, exitUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := redislockCmd(t, nil, tc.args...)
			if r.code != tc.code || r.stdout != "" || r.stderr == "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d and a message", r.code, r.stdout, r.stderr, tc.code)
			}
		})
	}

	for _, sub := range []string{"run", "status", "release"} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{sub, "--help"}, &stdout, &stderr); code != 0 {
			t.Fatalf("%s --help: exit %d", sub, code)
		}
		for _, want := range []string{"69", "--redis-error-exit-code", "  1 ", "  2 "} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("%s --help lacks %q in its exit statuses", sub, want)
			}
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"run", "--redis-error-exit-code", "300", "k", "true"}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "not in 0..255") {
		t.Errorf("--redis-error-exit-code 300: exit %d, stderr %q; want %d", code, stderr.String(), exitUsage)
	}
}

// Issue 32 item 7: a key of another type (a hash where the lock, the
// permits or the RWMutex keep something else) is refused in one line that
// names the key and what holds it, not Redis's WRONGTYPE with the script's
// text; exit 69 (a Redis error).
func TestWrongTypeOneLine(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	addr := "redis://" + rdb.Options().Addr
	key := redistest.Key(t, "wrongtype")
	if err := rdb.HSet(context.Background(), key, "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", "--redis", addr, key, "--", "true"},
		{"run", "--redis", addr, "--limit", "2", key, "--", "true"},
		{"run", "--redis", addr, "-s", key, "--", "true"},
	} {
		r := redislockCmd(t, nil, args...)
		msg := strings.TrimSpace(r.stderr)
		if r.code != exitUnavailable || strings.Count(msg, "\n") != 0 || !strings.Contains(msg, key) || !strings.Contains(msg, "hash") || strings.Contains(msg, "user_script") {
			t.Errorf("%q: exit %d, stderr %q; want %d and one line naming %s and the hash that holds it", args, r.code, r.stderr, exitUnavailable, key)
		} else {
			t.Logf("%q: %s", args[len(args)-3:], msg)
		}
	}
}
