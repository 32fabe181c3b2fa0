package main

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// TestRunMinHold: two runs of a 10 ms job, the second started 500 ms after
// the first (a replica behind): with --min-hold 3s exactly one runs it;
// a run started after the first has exited is refused too, and the key
// expires by itself within the hold. Without --min-hold, both run.
func TestRunMinHold(t *testing.T) {
	forEachTopology(t, func(t *testing.T, conn []string, rdb redis.UniversalClient) {
		key := redistest.Key(t, "job")
		flags := []string{"--min-hold", "3s"}
		env, a := runArgs(conn, flags, key, "sleep", "10ms")
		first := start(t, env, a...)
		_ = first.stdin.Close()
		// The skew of the second replica, not a synchronisation: whichever
		// run obtains the key, the other must be refused.
		time.Sleep(500 * time.Millisecond)
		second := start(t, env, a...)
		_ = second.stdin.Close()
		codes := []int{first.wait(), second.wait()}
		outs := []string{first.rest(), second.rest()}
		ran := 0
		for i, code := range codes {
			switch {
			case code == 0 && strings.Contains(outs[i], "done"):
				ran++
			case code == exitConflict && outs[i] == "":
			default:
				t.Errorf("run %d: exit %d, stdout %q; want 0 and the job's output, or %d and none", i+1, code, outs[i], exitConflict)
			}
		}
		if ran != 1 {
			t.Errorf("the job ran %d times, want once", ran)
		}

		// Started after both have exited: the job is long done.
		env, c := runArgs(conn, flags, key, "exit", "0")
		if r := redislockCmd(t, env, c...); r.code != exitConflict || r.stdout != "" || !strings.Contains(r.stderr, key+" is held") {
			t.Errorf("a third run within --min-hold: exit %d, stdout %q, stderr %q; want %d, nothing run, a message", r.code, r.stdout, r.stderr, exitConflict)
		}
		if ms := rdb.PTTL(t.Context(), key).Val(); ms <= 0 || ms > 3*time.Second {
			t.Errorf("after the runs %s has a TTL of %v, want (0, 3s]", key, ms)
		}

		plain := redistest.Key(t, "plain")
		for i := range 2 {
			env, a := runArgs(conn, nil, plain, "exit", "0")
			if r := redislockCmd(t, env, a...); r.code != 0 || !strings.Contains(r.stdout, "env "+plain) {
				t.Errorf("run %d without --min-hold: exit %d, stdout %q; want the job run", i+1, r.code, r.stdout)
			}
		}
	})
}

// TestRunOncePer: --once-per 1h locks KEY:START, which the command gets as
// REDISLOCK_KEY; a second run in the hour is refused, and the key is kept
// past the hour's end.
func TestRunOncePer(t *testing.T) {
	forEachTopology(t, func(t *testing.T, conn []string, rdb redis.UniversalClient) {
		job := redistest.Key(t, "job")
		flags := []string{"--once-per", "1h", "-v"}
		before, _ := redislock.SlotKey(job, time.Hour, time.Now())
		env, a := runArgs(conn, flags, job, "exit", "0")
		p := start(t, env, a...)
		_ = p.stdin.Close()
		got := parseEnvLine(t, p)
		if code := p.wait(); code != 0 {
			t.Fatalf("first run: exit %d; stderr: %s", code, p.stderr)
		}
		after, end := redislock.SlotKey(job, time.Hour, time.Now())
		if got.key != before && got.key != after {
			t.Fatalf("REDISLOCK_KEY = %q, want the slot's key %q", got.key, after)
		}
		if !strings.Contains(p.stderr.String(), got.key+" stays held for") {
			t.Errorf("-v does not say that the key stays held: %s", p.stderr)
		}
		if ms := rdb.PTTL(t.Context(), got.key).Val(); ms <= 0 || time.Now().Add(ms).Before(end) {
			t.Errorf("after the run %s has a TTL of %v, want it past the slot's end %v", got.key, ms, end)
		}
		r := redislockCmd(t, env, a...)
		if now, _ := redislock.SlotKey(job, time.Hour, time.Now()); now != got.key {
			// The hour turned between the two runs: the second is the
			// next slot's, and runs.
			if r.code != 0 || !strings.Contains(r.stdout, "env "+now) {
				t.Errorf("run in the next slot: exit %d, stdout %q; want it run with %s", r.code, r.stdout, now)
			}
			return
		}
		if r.code != exitConflict || r.stdout != "" || !strings.Contains(r.stderr, got.key+" is held") {
			t.Errorf("second run in the slot: exit %d, stdout %q, stderr %q; want %d, nothing run, a message naming %s", r.code, r.stdout, r.stderr, exitConflict, got.key)
		}
	})
}
