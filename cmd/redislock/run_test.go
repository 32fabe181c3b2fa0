package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// envLine is the first line of every helper: what "run" gave it.
type envLine struct {
	key, token, fence string
}

func parseEnvLine(t testing.TB, p *proc) envLine {
	t.Helper()
	f := strings.Fields(p.expect("env "))
	if len(f) != 3 {
		t.Fatalf("helper env line has %d fields, want 3: %q", len(f), f)
	}
	return envLine{key: f[0], token: f[1], fence: f[2]}
}

// runArgs returns the args and env of "redislock run" for key, with the
// helper in mode as the command.
func runArgs(conn []string, flags []string, key, mode string, modeArgs ...string) (env, cmdArgs []string) {
	env, command := helper(mode, modeArgs...)
	cmdArgs = append(args("run", conn, flags...), key)
	return env, append(cmdArgs, command...)
}

// TestRunContention: while one "run" holds the key, another gives up at once
// with 75 (or the code of --conflict-exit-code, or after --wait), and one
// with --wait runs its command once the first has finished.
func TestRunContention(t *testing.T) {
	forEachTopology(t, func(t *testing.T, conn []string, rdb redis.UniversalClient) {
		key := redistest.Key(t, "lock")
		env, a := runArgs(conn, []string{"--metadata", "holder-A"}, key, "hold", "0")
		holder := start(t, env, a...)
		held := parseEnvLine(t, holder)
		holder.expect("ready")
		if held.key != key || held.token == "" || held.fence != "unset" {
			t.Fatalf("holder's environment = %+v, want key %q, a token, no fence token", held, key)
		}

		env, b := runArgs(conn, nil, key, "exit", "0")
		r := redislockCmd(t, env, b...)
		if r.code != exitConflict {
			t.Errorf("second run: exit %d, want %d; stderr: %s", r.code, exitConflict, r.stderr)
		}
		if r.stdout != "" {
			t.Errorf("second run's command ran: stdout %q", r.stdout)
		}
		// Gave up at once: a run that waited says "not obtained within".
		if !strings.Contains(r.stderr, key+` is held by "holder-A"`) || strings.Count(r.stderr, "\n") != 1 || strings.Contains(r.stderr, "within") {
			t.Errorf("second run: stderr = %q, want one line naming the key and its holder", r.stderr)
		}

		env, b = runArgs(conn, []string{"--conflict-exit-code", "0", "--wait", "200ms"}, key, "exit", "0")
		if r := redislockCmd(t, env, b...); r.code != 0 || !strings.Contains(r.stderr, "not obtained within 200ms") {
			t.Errorf("run --conflict-exit-code 0 --wait 200ms: exit %d, stderr %q; want 0 and a message", r.code, r.stderr)
		}

		env, c := runArgs(conn, []string{"--wait", "15s"}, key, "exit", "4")
		waiter := start(t, env, c...)
		// The waiter has tried and failed once it is in the key's wait
		// queue (see redislock.WaitForRelease).
		queue := key + ":redislock:waiters"
		pollUntil(t, "the waiter to queue in "+queue, func() bool { return exists(t, rdb, queue) })
		if !waiter.running() {
			t.Fatalf("the waiter exited (%d) while the lock was held; stderr: %s", waiter.wait(), waiter.stderr)
		}

		if _, err := holder.stdin.Write([]byte("done\n")); err != nil {
			t.Fatal(err)
		}
		if code := holder.wait(); code != 0 {
			t.Errorf("holder: exit %d, want 0 (its command's); stderr: %s", code, holder.stderr)
		}
		got := parseEnvLine(t, waiter)
		if got.token == held.token || got.token == "" {
			t.Errorf("waiter's token = %q, want a token of its own (holder's %q)", got.token, held.token)
		}
		if code := waiter.wait(); code != 4 {
			t.Errorf("waiter: exit %d, want 4 (its command's); stderr: %s", code, waiter.stderr)
		}
		if exists(t, rdb, key) {
			t.Errorf("%s still exists after both runs", key)
		}
	})
}

// TestRunOutlivesTTL: a command that runs twice the TTL keeps the lock all
// along, and the key is gone once it exits. (A 2 s TTL leaves the
// keep-alive room for a loaded test machine; 1 s lost it there.)
func TestRunOutlivesTTL(t *testing.T) {
	forEachTopology(t, func(t *testing.T, conn []string, rdb redis.UniversalClient) {
		key := redistest.Key(t, "lock")
		const ttl, work = 2 * time.Second, 4 * time.Second
		env, a := runArgs(conn, []string{"--ttl", ttl.String()}, key, "sleep", work.String())
		p := start(t, env, a...)
		token := parseEnvLine(t, p).token
		p.expect("ready")
		began := time.Now()

		locker := redislock.New(rdb)
		checks := 0
	checking:
		for {
			select {
			case l := <-p.lines:
				if l != "done" {
					t.Fatalf("command printed %q, want done", l)
				}
				break checking
			default:
			}
			info, err := locker.Inspect(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			if !info.Held || info.Token != token || info.TTL <= 0 || info.TTL > ttl {
				// Fine if the command has just finished: the lock is
				// released after it printed done.
				if l := p.line(); l != "done" {
					t.Fatalf("%v into the run: %+v, want held with token %q and a TTL in (0, %v]", time.Since(began), info, token, ttl)
				}
				break
			}
			checks++
			pollPause()
		}
		// "done" came: the command slept its whole work time under the lock.
		if code := p.wait(); code != 0 {
			t.Fatalf("exit %d, want 0; stderr: %s", code, p.stderr)
		}
		if checks < 10 {
			t.Errorf("only %d checks while the command ran", checks)
		}
		if exists(t, rdb, key) {
			t.Errorf("%s still exists after the run", key)
		}
	})
}

// TestRunLost: deleting the key while the command runs stops the command
// (SIGTERM to it) and exits 76.
func TestRunLost(t *testing.T) {
	forEachTopology(t, func(t *testing.T, conn []string, rdb redis.UniversalClient) {
		key := redistest.Key(t, "lock")
		env, a := runArgs(conn, []string{"--ttl", "2s"}, key, "trap")
		p := start(t, env, a...)
		parseEnvLine(t, p)
		p.expect("ready")
		if err := rdb.Del(context.Background(), key).Err(); err != nil {
			t.Fatal(err)
		}
		// The next refresh (within a third of the TTL) finds it gone.
		if got := p.line(); got != "got SIGTERM" {
			t.Errorf("command printed %q, want %q", got, "got SIGTERM")
		}
		if code := p.wait(); code != exitLost {
			t.Errorf("exit %d, want %d", code, exitLost)
		}
		if stderr := p.stderr.String(); !strings.Contains(stderr, "lock lost") || !strings.Contains(stderr, key) {
			t.Errorf("stderr = %q, want it to say the lock on %s was lost", stderr, key)
		}
	})
}

// TestRunLostGrace: after a loss, a command that ignores SIGTERM gets
// SIGKILL after --grace, and so do the processes of its group that outlive
// it.
func TestRunLostGrace(t *testing.T) {
	t.Parallel()
	conn, rdb := topologies[0].conn(t)
	env, helperCmd := helper("ignore")
	for _, tc := range []struct {
		name    string
		command []string
	}{
		{"command", helperCmd},
		// sh exits on SIGTERM; the helper it started goes on.
		{"straggler", []string{"--", "sh", "-c", `trap "exit 0" TERM; "$0" & wait`, helperCmd[1]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key := redistest.Key(t, "lock")
			a := append(args("run", conn, "--ttl", "1s", "--grace", "300ms", key), tc.command...)
			p := start(t, env, a...)
			parseEnvLine(t, p)
			p.expect("ready")
			if err := rdb.Del(context.Background(), key).Err(); err != nil {
				t.Fatal(err)
			}
			// p.wait returns once every process that shares its stdout is
			// gone: the helper too.
			if code := p.wait(); code != exitLost {
				t.Errorf("exit %d, want %d; stderr: %s", code, exitLost, p.stderr)
			}
			if stderr := p.stderr.String(); !strings.Contains(stderr, "SIGKILL") {
				t.Errorf("stderr = %q, want it to tell of the SIGKILL", stderr)
			}
		})
	}
}

// TestRunLostFoundAtRelease: a lock taken over while the command runs, and
// noticed only by the release, still exits 76.
func TestRunLostFoundAtRelease(t *testing.T) {
	t.Parallel()
	conn, rdb := topologies[0].conn(t)
	key := redistest.Key(t, "lock")
	// A TTL long enough that no refresh happens during the test.
	env, a := runArgs(conn, []string{"--ttl", "1m"}, key, "hold", "0")
	p := start(t, env, a...)
	parseEnvLine(t, p)
	p.expect("ready")
	if err := rdb.Set(context.Background(), key, "someone else", 0).Err(); err != nil {
		t.Fatal(err)
	}
	_ = p.stdin.Close()
	if code := p.wait(); code != exitLost {
		t.Errorf("exit %d, want %d; stderr: %s", code, exitLost, p.stderr)
	}
	if v, err := rdb.Get(context.Background(), key).Result(); err != nil || v != "someone else" {
		t.Errorf("the other holder's key = %q, %v; want it left alone", v, err)
	}
}

// TestRunFence: REDISLOCK_FENCE_TOKEN increases from one run to the next;
// without --fence-key it is not set, even when inherited.
func TestRunFence(t *testing.T) {
	forEachTopology(t, func(t *testing.T, conn []string, _ redis.UniversalClient) {
		key, fence := redistest.Key(t, "lock"), redistest.Key(t, "fence")
		var last int64
		for i := range 3 {
			env, a := runArgs(conn, []string{"--fence-key", fence}, key, "exit", "0")
			p := start(t, env, a...)
			got := parseEnvLine(t, p)
			if code := p.wait(); code != 0 {
				t.Fatalf("run %d: exit %d; stderr: %s", i, code, p.stderr)
			}
			n, err := strconv.ParseInt(got.fence, 10, 64)
			if err != nil || n <= last {
				t.Fatalf("run %d: REDISLOCK_FENCE_TOKEN = %q, want a number above %d", i, got.fence, last)
			}
			last = n
		}

		if slices.Contains(conn, "--cluster") {
			// A fence key in another hash slot is refused before anything
			// is sent.
			env, a := runArgs(conn, []string{"--fence-key", "fence-without-tag"}, key, "exit", "0")
			if r := redislockCmd(t, env, a...); r.code != exitUsage || !strings.Contains(r.stderr, "hash slot") || r.stdout != "" {
				t.Errorf("fence key in another slot: exit %d, stdout %q, stderr %q; want %d and a message", r.code, r.stdout, r.stderr, exitUsage)
			}
		}

		env, a := runArgs(conn, nil, key, "exit", "0")
		p := start(t, append(env, envFenceToken+"=999"), a...)
		if got := parseEnvLine(t, p); got.fence != "unset" {
			t.Errorf("without --fence-key: REDISLOCK_FENCE_TOKEN = %q, want it unset", got.fence)
		}
		p.wait()
	})
}

// TestRunSignals: SIGTERM and SIGINT sent to redislock reach the command,
// and the lock is released once it has exited.
func TestRunSignals(t *testing.T) {
	forEachTopology(t, func(t *testing.T, conn []string, rdb redis.UniversalClient) {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			t.Run(signalName(sig), func(t *testing.T) {
				key := redistest.Key(t, "lock")
				env, a := runArgs(conn, nil, key, "trap")
				p := start(t, env, a...)
				parseEnvLine(t, p)
				p.expect("ready")
				if err := p.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				if got, want := p.line(), "got "+signalName(sig); got != want {
					t.Errorf("command printed %q, want %q", got, want)
				}
				if code := p.wait(); code != 9 {
					t.Errorf("exit %d, want 9 (the command's); stderr: %s", code, p.stderr)
				}
				if exists(t, rdb, key) {
					t.Errorf("%s still held after the command exited", key)
				}
			})
		}
	})
}

// TestRunStatus: the command's exit code is redislock's; a command killed
// by a signal gives 128+N; one that cannot be found gives 127, and nothing
// is locked.
func TestRunStatus(t *testing.T) {
	t.Parallel()
	conn, rdb := topologies[0].conn(t)
	key := redistest.Key(t, "lock")
	for _, code := range []int{0, 1, 42} {
		env, a := runArgs(conn, nil, key, "exit", strconv.Itoa(code))
		if r := redislockCmd(t, env, a...); r.code != code {
			t.Errorf("command exits %d: redislock exit %d; stderr: %s", code, r.code, r.stderr)
		}
	}

	r := redislockCmd(t, nil, args("run", conn, key, "--", "sh", "-c", "kill -KILL $$")...)
	if want := exitSignal + int(syscall.SIGKILL); r.code != want {
		t.Errorf("command killed by SIGKILL: exit %d, want %d; stderr: %s", r.code, want, r.stderr)
	}

	r = redislockCmd(t, nil, args("run", conn, key, "--", "no-such-command-redislock")...)
	if r.code != exitNotFound || !strings.Contains(r.stderr, "no-such-command-redislock") {
		t.Errorf("missing command: exit %d, stderr %q; want %d and its name", r.code, r.stderr, exitNotFound)
	}
	if exists(t, rdb, key) {
		t.Errorf("%s exists after the runs", key)
	}
}

// TestRunSentinel: "run" through Sentinel, both forms.
func TestRunSentinel(t *testing.T) {
	t.Parallel()
	s := redistest.SharedSentinel(t, redistest.Redis)
	addrs := strings.Join(s.SentinelAddrs(), ",")
	for _, tc := range []struct {
		name string
		conn []string
	}{
		{"url", []string{"--redis", "redis-sentinel://" + addrs + "/" + redistest.MasterName}},
		{"flag", []string{"--sentinel-master", redistest.MasterName, "--redis", addrs}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := redistest.Key(t, "lock")
			env, a := runArgs(tc.conn, nil, key, "hold", "0")
			p := start(t, env, a...)
			token := parseEnvLine(t, p).token
			p.expect("ready")
			info, err := redislock.New(s.Client(t)).Inspect(context.Background(), key)
			if err != nil || !info.Held || info.Token != token {
				t.Errorf("on the master: %+v, %v; want held with %q", info, err, token)
			}
			_ = p.stdin.Close()
			if code := p.wait(); code != 0 {
				t.Errorf("exit %d; stderr: %s", code, p.stderr)
			}
		})
	}
}

// pollUntil waits until cond holds, failing the test after procTimeout.
func pollUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	redistest.WaitFor(t, what, procTimeout, cond)
}

// pollPause is the interval of polling loops: it paces them, it does not
// synchronise anything.
func pollPause() { time.Sleep(20 * time.Millisecond) }

// TestRunInterruptedWaiting: a signal while waiting for the lock ends the
// wait with 128+N; the command never runs.
func TestRunInterruptedWaiting(t *testing.T) {
	t.Parallel()
	conn, rdb := topologies[0].conn(t)
	key := redistest.Key(t, "lock")
	env, a := runArgs(conn, nil, key, "hold", "0")
	holder := start(t, env, a...)
	parseEnvLine(t, holder)
	holder.expect("ready")

	env, a = runArgs(conn, []string{"--wait", "15s"}, key, "exit", "0")
	waiter := start(t, env, a...)
	queue := key + ":redislock:waiters"
	pollUntil(t, "the waiter to queue in "+queue, func() bool { return exists(t, rdb, queue) })
	if err := waiter.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code, want := waiter.wait(), exitSignal+int(syscall.SIGINT); code != want {
		t.Errorf("waiter: exit %d, want %d; stderr: %s", code, want, waiter.stderr)
	}
	if out := waiter.rest(); out != "" {
		t.Errorf("the waiter's command ran: %q", out)
	}
	if stderr := waiter.stderr.String(); !strings.Contains(stderr, "interrupted by SIGINT") {
		t.Errorf("waiter's stderr = %q, want it to say it was interrupted", stderr)
	}
	_ = holder.stdin.Close()
	if code := holder.wait(); code != 0 {
		t.Errorf("holder: exit %d; stderr: %s", code, holder.stderr)
	}
}

// TestRunFlockFlags: the flags of flock(1) and its kin: -q says nothing
// on a conflict, -E sets its exit code, -w takes seconds, --wait forever
// waits until the holder is done, -c runs a shell command, and -v reports
// the lock obtained, refreshed (with its fencing token) and released.
func TestRunFlockFlags(t *testing.T) {
	t.Parallel()
	conn, rdb := topologies[0].conn(t)
	key := redistest.Key(t, "lock")
	env, a := runArgs(conn, nil, key, "hold", "0")
	holder := start(t, env, a...)
	parseEnvLine(t, holder)
	holder.expect("ready")

	env, b := runArgs(conn, []string{"-q"}, key, "exit", "0")
	if r := redislockCmd(t, env, b...); r.code != exitConflict || r.stderr != "" || r.stdout != "" {
		t.Errorf("-q: exit %d, stdout %q, stderr %q; want %d and nothing said", r.code, r.stdout, r.stderr, exitConflict)
	}
	env, b = runArgs(conn, []string{"-E", "3", "-n"}, key, "exit", "0")
	if r := redislockCmd(t, env, b...); r.code != 3 {
		t.Errorf("-E 3 -n: exit %d, want 3; stderr %q", r.code, r.stderr)
	}
	env, b = runArgs(conn, []string{"-w", "0.3"}, key, "exit", "0")
	if r := redislockCmd(t, env, b...); r.code != exitConflict || !strings.Contains(r.stderr, "not obtained within 300ms") || r.took < 300*time.Millisecond {
		t.Errorf("-w 0.3: exit %d after %v, stderr %q; want %d after 300ms", r.code, r.took, r.stderr, exitConflict)
	}

	waiter := start(t, nil, args("run", conn, "--wait", "forever", "-v", key, "-c", `echo "shell $REDISLOCK_KEY"`)...)
	queue := key + ":redislock:waiters"
	pollUntil(t, "the waiter to queue in "+queue, func() bool { return exists(t, rdb, queue) })
	_ = holder.stdin.Close()
	if code := holder.wait(); code != 0 {
		t.Errorf("holder: exit %d; stderr: %s", code, holder.stderr)
	}
	if got := waiter.line(); got != "shell "+key {
		t.Errorf("waiter's shell command printed %q, want %q", got, "shell "+key)
	}
	if code := waiter.wait(); code != 0 {
		t.Errorf("waiter: exit %d; stderr: %s", code, waiter.stderr)
	}

	fence := redistest.Tag(t) + ":fence"
	env, b = runArgs(conn, []string{"-v", "--ttl", "1s", "--fence-key", fence}, key, "sleep", "1500ms")
	r := redislockCmd(t, env, b...)
	if r.code != 0 {
		t.Fatalf("-v: exit %d; stderr: %s", r.code, r.stderr)
	}
	for _, want := range []string{"obtained " + key + " (token ", ", fence token ", "refreshed " + key, "released " + key} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("-v: stderr = %q, want it to contain %q", r.stderr, want)
		}
	}
}
