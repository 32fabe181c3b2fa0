package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/redistest"
)

// TestRunLimit: with --limit 2, two runs hold KEY at once, a third gives up
// with 75 naming the holders, status lists both permits, and a waiting run
// starts once a holder has finished.
func TestRunLimit(t *testing.T) {
	forEachTopology(t, func(t *testing.T, conn []string, rdb redis.UniversalClient) {
		key := redistest.Key(t, "sem")
		var holders []*proc
		var tokens []string
		for _, name := range []string{"holder-A", "holder-B"} {
			env, a := runArgs(conn, []string{"--limit", "2", "--metadata", name}, key, "hold", "0")
			p := start(t, env, a...)
			got := parseEnvLine(t, p)
			p.expect("ready")
			if got.key != key || got.token == "" {
				t.Fatalf("%s's environment = %+v", name, got)
			}
			holders, tokens = append(holders, p), append(tokens, got.token)
		}

		env, b := runArgs(conn, []string{"--limit", "2"}, key, "exit", "0")
		r := redislockCmd(t, env, b...)
		if r.code != exitConflict || r.stdout != "" {
			t.Errorf("third run: exit %d, stdout %q; want %d and no command run; stderr: %s", r.code, r.stdout, exitConflict, r.stderr)
		}
		if !strings.Contains(r.stderr, key+` is held by 2 of 2 jobs: "holder-`) {
			t.Errorf("third run: stderr = %q, want the key and its holders", r.stderr)
		}

		r = redislockCmd(t, nil, args("status", conn, "--json", key)...)
		var report statusReport
		if err := json.Unmarshal([]byte(r.stdout), &report); r.code != 0 || err != nil || len(report.Locks) != 1 {
			t.Fatalf("status --json: exit %d, %v:\n%s%s", r.code, err, r.stdout, r.stderr)
		}
		s := report.Locks[0]
		if !s.Semaphore || !s.Held || len(s.Permits) != 2 {
			t.Fatalf("status of the semaphore: %+v, want 2 permits", s)
		}
		seen := map[string]string{}
		for _, p := range s.Permits {
			seen[p.Token] = p.Metadata
			if p.TTLms <= 0 || p.TTLms > 30000 {
				t.Errorf("permit %+v: ttl_ms out of (0, 30000]", p)
			}
		}
		if seen[tokens[0]] != "holder-A" || seen[tokens[1]] != "holder-B" {
			t.Errorf("status permits = %+v, want the tokens %q of holder-A and holder-B", s.Permits, tokens)
		}
		r = redislockCmd(t, nil, args("status", conn, key)...)
		if !strings.Contains(r.stdout, "permit 1/2") || !strings.Contains(r.stdout, "permit 2/2") || !strings.Contains(r.stdout, `"holder-A"`) {
			t.Errorf("status table:\n%s", r.stdout)
		}

		env, c := runArgs(conn, []string{"--limit", "2", "--wait", "15s"}, key, "exit", "4")
		waiter := start(t, env, c...)
		if _, err := holders[0].stdin.Write([]byte("done\n")); err != nil {
			t.Fatal(err)
		}
		if code := holders[0].wait(); code != 0 {
			t.Errorf("holder-A: exit %d; stderr: %s", code, holders[0].stderr)
		}
		got := parseEnvLine(t, waiter)
		if got.token == tokens[0] || got.token == tokens[1] || got.token == "" {
			t.Errorf("waiter's token = %q, want its own", got.token)
		}
		if code := waiter.wait(); code != 4 {
			t.Errorf("waiter: exit %d, want 4; stderr: %s", code, waiter.stderr)
		}
		if _, err := holders[1].stdin.Write([]byte("done\n")); err != nil {
			t.Fatal(err)
		}
		if code := holders[1].wait(); code != 0 {
			t.Errorf("holder-B: exit %d; stderr: %s", code, holders[1].stderr)
		}
		if exists(t, rdb, key) || exists(t, rdb, key+":redislock:permits") {
			t.Errorf("%s or its permits still exist after every run", key)
		}
		if r := redislockCmd(t, nil, args("run", conn, "--limit", "-1", key, "--", "true")...); r.code != exitUsage {
			t.Errorf("--limit -1: exit %d, want %d", r.code, exitUsage)
		}
	})
}

// TestRunLimitWaitQueues: --limit with --wait waits as a lock's run does
// (WaitForRelease): the waiting run is registered in the semaphore's wait
// queue, and the release of a holder that waited too hands it the permit.
// Before, a waiting run polled and was never in the queue.
func TestRunLimitWaitQueues(t *testing.T) {
	forEachTopology(t, func(t *testing.T, conn []string, rdb redis.UniversalClient) {
		key := redistest.Key(t, "sem")
		env, a := runArgs(conn, []string{"--limit", "1", "--wait", "15s"}, key, "hold", "0")
		holder := start(t, env, a...)
		parseEnvLine(t, holder)
		holder.expect("ready")

		env, b := runArgs(conn, []string{"--limit", "1", "--wait", "15s"}, key, "exit", "3")
		waiter := start(t, env, b...)
		redistest.WaitFor(t, "the waiting run to register", 10*time.Second, func() bool {
			return rdb.ZCard(context.Background(), key+":redislock:waiters").Val() == 1
		})
		if _, err := holder.stdin.Write([]byte("done\n")); err != nil {
			t.Fatal(err)
		}
		if code := holder.wait(); code != 0 {
			t.Errorf("holder: exit %d; stderr: %s", code, holder.stderr)
		}
		parseEnvLine(t, waiter)
		if code := waiter.wait(); code != 3 {
			t.Errorf("waiter: exit %d, want 3; stderr: %s", code, waiter.stderr)
		}
	})
}
