package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/redistest"
)

// TestRunFlockHabits: the flags of flock(1) that cron lines carry are
// accepted with flock's meaning: --timeout is -w, -x and --exclusive (and
// -e) are the default, -o and --close change nothing (COMMAND never holds
// the lock), -V and --version print the version.
func TestRunFlockHabits(t *testing.T) {
	t.Parallel()
	conn, _ := topologies[0].conn(t)
	key := redistest.Key(t, "lock")
	for _, flags := range [][]string{{"-x"}, {"--exclusive"}, {"-e"}, {"-o"}, {"--close"}, {"-x", "-o", "-n"}} {
		env, a := runArgs(conn, flags, key, "exit", "0")
		if r := redislockCmd(t, env, a...); r.code != 0 || !strings.HasPrefix(r.stdout, "env "+key+" ") {
			t.Errorf("run %s: exit %d, stdout %q, stderr %q; want the command run", strings.Join(flags, " "), r.code, r.stdout, r.stderr)
		}
	}
	for _, a := range [][]string{{"run", "-V"}, {"run", "--version"}, {"-V"}} {
		if r := redislockCmd(t, nil, a...); r.code != 0 || !strings.HasPrefix(r.stdout, "redislock ") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want the version", strings.Join(a, " "), r.code, r.stdout, r.stderr)
		}
	}

	env, a := runArgs(conn, nil, key, "hold", "0")
	holder := start(t, env, a...)
	parseEnvLine(t, holder)
	holder.expect("ready")
	env, b := runArgs(conn, []string{"--timeout", "0.3"}, key, "exit", "0")
	if r := redislockCmd(t, env, b...); r.code != exitConflict || !strings.Contains(r.stderr, "not obtained within 300ms") || r.took < 300*time.Millisecond {
		t.Errorf("--timeout 0.3: exit %d after %v, stderr %q; want %d after 300ms", r.code, r.took, r.stderr, exitConflict)
	}
	_ = holder.stdin.Close()
	if code := holder.wait(); code != 0 {
		t.Errorf("holder: exit %d; stderr: %s", code, holder.stderr)
	}

	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"-s", "-x"}, "-s (--shared) contradicts -x (--exclusive)"},
		{[]string{"--shared", "--limit", "2"}, "--shared and --limit"},
		{[]string{"-s", "--fence-key", "f"}, "--fence-key"},
	} {
		env, a := runArgs(conn, tc.flags, key, "exit", "0")
		if r := redislockCmd(t, env, a...); r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("run %s: exit %d, stdout %q, stderr %q; want %d and %q", strings.Join(tc.flags, " "), r.code, r.stdout, r.stderr, exitUsage, tc.want)
		}
	}
}

// TestRunShared: -s (--shared) runs hold KEY together, as flock -s does: two
// at once, while an exclusive run is refused (75, naming them) or, with
// --wait, waits for both to end; a shared run is refused while an
// exclusive one runs, and with --wait starts once it has ended. status
// lists the shared holds; release refuses their tokens, saying why.
func TestRunShared(t *testing.T) {
	forEachTopology(t, func(t *testing.T, conn []string, rdb redis.UniversalClient) {
		key := redistest.Key(t, "lock")
		var readers []*proc
		var tokens []string
		for _, name := range []string{"reader-A", "reader-B"} {
			env, a := runArgs(conn, []string{"-s", "--metadata", name}, key, "hold", "0")
			p := start(t, env, a...)
			got := parseEnvLine(t, p)
			p.expect("ready")
			readers, tokens = append(readers, p), append(tokens, got.token)
		}

		for _, flags := range [][]string{nil, {"-x"}} {
			env, a := runArgs(conn, flags, key, "exit", "0")
			r := redislockCmd(t, env, a...)
			if r.code != exitConflict || r.stdout != "" || !strings.Contains(r.stderr, "2 shared runs") || !strings.Contains(r.stderr, `"reader-A"`) {
				t.Errorf("exclusive run %q beside two shared ones: exit %d, stdout %q, stderr %q; want %d and the shared holders named", flags, r.code, r.stdout, r.stderr, exitConflict)
			}
		}
		if exists(t, rdb, key) {
			t.Errorf("a refused exclusive run left %s behind", key)
		}

		r := redislockCmd(t, nil, args("status", conn, "--json", key)...)
		var report statusReport
		if err := json.Unmarshal([]byte(r.stdout), &report); r.code != 0 || err != nil || len(report.Locks) != 1 {
			t.Fatalf("status --json: exit %d, %v:\n%s%s", r.code, err, r.stdout, r.stderr)
		}
		s := report.Locks[0]
		if s.Held || len(s.Shared) != 2 {
			t.Fatalf("status of %s: %+v, want not held exclusively and 2 shared holds", key, s)
		}
		seen := map[string]string{}
		for _, h := range s.Shared {
			seen[h.Token] = h.Metadata
			if h.TTLms <= 0 || h.TTLms > 30000 {
				t.Errorf("shared hold %+v: ttl_ms out of (0, 30000]", h)
			}
		}
		if seen[tokens[0]] != "reader-A" || seen[tokens[1]] != "reader-B" {
			t.Errorf("status shared = %+v, want the tokens %q of reader-A and reader-B", s.Shared, tokens)
		}
		r = redislockCmd(t, nil, args("status", conn, key)...)
		if !strings.Contains(r.stdout, "shared 1/2") || !strings.Contains(r.stdout, `"reader-B"`) {
			t.Errorf("status table:\n%s", r.stdout)
		}
		r = redislockCmd(t, nil, args("release", conn, key, "--token", tokens[0])...)
		if r.code != exitNotHeld || !strings.Contains(r.stderr, "shared") {
			t.Errorf("release of a shared hold: exit %d, stderr %q; want %d and why", r.code, r.stderr, exitNotHeld)
		}

		// An exclusive run that waits takes KEY at once and then waits for
		// the shared runs to end; meanwhile no new shared run gets in.
		dir := t.TempDir()
		writerStarted, waiterStarted := filepath.Join(dir, "writer"), filepath.Join(dir, "waiter")
		env, a := runArgs(conn, []string{"--wait", "15s"}, key, "stamp", writerStarted)
		writer := start(t, env, a...)
		pollUntil(t, "the waiting exclusive run to take "+key, func() bool { return exists(t, rdb, key) })
		env, a = runArgs(conn, []string{"--shared"}, key, "exit", "0")
		if r := redislockCmd(t, env, a...); r.code != exitConflict || r.stdout != "" {
			t.Errorf("shared run beside a waiting exclusive one: exit %d, stdout %q, stderr %q; want %d", r.code, r.stdout, r.stderr, exitConflict)
		}
		var lastEnded int64
		for i, p := range readers {
			if i == len(readers)-1 {
				lastEnded = time.Now().UnixNano()
			}
			if _, err := p.stdin.Write([]byte("done\n")); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(); code != 0 {
				t.Errorf("shared run %d: exit %d; stderr: %s", i, code, p.stderr)
			}
		}
		parseEnvLine(t, writer)
		if code := writer.wait(); code != 0 {
			t.Errorf("exclusive run: exit %d, want 0; stderr: %s", code, writer.stderr)
		}
		if st := readStamps(t, writerStarted); len(st) != 1 || st[0] < lastEnded {
			t.Errorf("the waiting exclusive run's command started at %v, before the last shared run was told to end (%d)", st, lastEnded)
		}

		// A shared run beside an exclusive one: refused, or waits.
		env, a = runArgs(conn, []string{"--metadata", "writer-X"}, key, "hold", "0")
		holder := start(t, env, a...)
		parseEnvLine(t, holder)
		holder.expect("ready")
		env, a = runArgs(conn, []string{"-s"}, key, "exit", "0")
		if r := redislockCmd(t, env, a...); r.code != exitConflict || r.stdout != "" || !strings.Contains(r.stderr, `"writer-X"`) {
			t.Errorf("shared run beside an exclusive one: exit %d, stdout %q, stderr %q; want %d naming the holder", r.code, r.stdout, r.stderr, exitConflict)
		}
		env, a = runArgs(conn, []string{"-s", "--wait", "15s", "-v"}, key, "stamp", waiterStarted)
		waiter := start(t, env, a...)
		pollUntil(t, "the waiting shared run to find "+key+" held", func() bool {
			return strings.Contains(waiter.stderr.String(), "trying again")
		})
		ended := time.Now().UnixNano()
		if _, err := holder.stdin.Write([]byte("done\n")); err != nil {
			t.Fatal(err)
		}
		if code := holder.wait(); code != 0 {
			t.Errorf("exclusive holder: exit %d; stderr: %s", code, holder.stderr)
		}
		parseEnvLine(t, waiter)
		if code := waiter.wait(); code != 0 {
			t.Errorf("waiting shared run: exit %d, want 0; stderr: %s", code, waiter.stderr)
		}
		if st := readStamps(t, waiterStarted); len(st) != 1 || st[0] < ended {
			t.Errorf("the waiting shared run's command started at %v, before the exclusive run was told to end (%d)", st, ended)
		}
		if exists(t, rdb, key) {
			t.Errorf("%s still exists after every run", key)
		}
	})
}
