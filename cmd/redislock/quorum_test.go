package main

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// quorumMasters starts n masters of the test's own, each with AOF
// (appendfsync always: a master that keeps its data takes locks from its
// first second, where one without persistence waits out --max-ttl), and
// returns them, a client of each, and the --redis flags that name them.
func quorumMasters(t *testing.T, n int) ([]*redistest.Server, []*redis.Client, []string) {
	t.Helper()
	servers := make([]*redistest.Server, n)
	clients := make([]*redis.Client, n)
	var conn []string
	for i := range n {
		servers[i] = redistest.NewServer(t, redistest.Redis, "--appendonly", "yes", "--appendfsync", "always")
		clients[i] = servers[i].Client(t)
		conn = append(conn, "--redis", "redis://"+servers[i].Addr())
	}
	return servers, clients, conn
}

// heldOn returns how many of clients hold key with token.
func heldOn(t *testing.T, clients []*redis.Client, key, token string) int {
	t.Helper()
	n := 0
	for _, c := range clients {
		info, err := redislock.New(c).Inspect(context.Background(), key)
		if err != nil {
			t.Fatalf("inspect %s: %v", key, err)
		}
		if info.Held && info.Token == token {
			n++
		}
	}
	return n
}

// TestRunQuorum: "run" with three --redis runs its job on the quorum: the
// key on every master with the job's token, a second run refused (75)
// naming the holder, a waiting run let in when the first ends, status
// reading the majority; with one master killed a run still works, with a
// greater fencing token; with two killed it exits 69 and runs nothing.
func TestRunQuorum(t *testing.T) {
	t.Parallel()
	servers, clients, conn := quorumMasters(t, 3)
	key, fence := redistest.Key(t, "lock"), redistest.Key(t, "fence")

	env, a := runArgs(conn, []string{"--fence-key", fence, "--metadata", "holder-A"}, key, "hold", "0")
	holder := start(t, env, a...)
	held := parseEnvLine(t, holder)
	holder.expect("ready")
	first, err := strconv.ParseInt(held.fence, 10, 64)
	if err != nil || first <= 0 || held.key != key {
		t.Fatalf("holder's environment = %+v, want key %q and a fencing token", held, key)
	}
	if n := heldOn(t, clients, key, held.token); n != 3 {
		t.Fatalf("%s held with the job's token on %d of 3 masters, want 3", key, n)
	}

	env, b := runArgs(conn, nil, key, "exit", "0")
	r := redislockCmd(t, env, b...)
	if r.code != exitConflict || r.stdout != "" {
		t.Errorf("second run: exit %d, stdout %q; want %d and nothing run; stderr: %s", r.code, r.stdout, exitConflict, r.stderr)
	}
	if !strings.Contains(r.stderr, key+` is held by "holder-A" on 3 of 3 masters`) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("second run: stderr = %q, want one line naming the key, its holder and the masters", r.stderr)
	}

	st := redislockCmd(t, nil, args("status", conn, key)...)
	if st.code != 0 || !strings.Contains(st.stdout, "yes (3/3 masters)") || !strings.Contains(st.stdout, `"holder-A"`) || !strings.Contains(st.stdout, held.fence) {
		t.Errorf("status: exit %d, stdout %q, stderr %q; want the key held on 3/3 masters by holder-A with token %s", st.code, st.stdout, st.stderr, held.fence)
	}

	env, w := runArgs(conn, []string{"--wait", "15s", "--fence-key", fence}, key, "exit", "4")
	waiter := start(t, env, w...)
	if _, err := holder.stdin.Write([]byte("done\n")); err != nil {
		t.Fatal(err)
	}
	if code := holder.wait(); code != 0 {
		t.Errorf("holder: exit %d, want 0; stderr: %s", code, holder.stderr)
	}
	next := parseEnvLine(t, waiter)
	if code := waiter.wait(); code != 4 {
		t.Errorf("waiting run: exit %d, want 4 (its command's); stderr: %s", code, waiter.stderr)
	}
	second, _ := strconv.ParseInt(next.fence, 10, 64)
	if second <= first {
		t.Errorf("waiting run's fencing token %s, want above the first run's %d", next.fence, first)
	}
	for i, c := range clients {
		if exists(t, c, key) {
			t.Errorf("master %d still has %s after both runs", i, key)
		}
	}

	servers[0].Kill()
	env, c := runArgs(conn, []string{"--fence-key", fence}, key, "exit", "5")
	p := start(t, env, c...)
	got := parseEnvLine(t, p)
	if code := p.wait(); code != 5 {
		t.Errorf("run with one master of 3 dead: exit %d, want 5 (its command's); stderr: %s", code, p.stderr)
	}
	if third, _ := strconv.ParseInt(got.fence, 10, 64); third <= second {
		t.Errorf("run with one master dead: fencing token %s, want above %d", got.fence, second)
	}
	st = redislockCmd(t, nil, args("status", conn, key)...)
	if st.code != 0 || !strings.Contains(st.stdout, "no (0/3 masters)") || !strings.Contains(st.stderr, "--redis #1") {
		t.Errorf("status with one master dead: exit %d, stdout %q, stderr %q; want the key free, and master #1 named on stderr", st.code, st.stdout, st.stderr)
	}

	servers[1].Kill()
	r = redislockCmd(t, env, c...)
	if r.code != exitUnavailable || r.stdout != "" {
		t.Errorf("run with two masters of 3 dead: exit %d, stdout %q; want %d and nothing run; stderr: %s", r.code, r.stdout, exitUnavailable, r.stderr)
	}
	if !strings.Contains(r.stderr, "cannot reach a majority (2) of the 3 masters") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("run with two masters dead: stderr = %q, want one line saying a majority cannot be reached", r.stderr)
	}
	if st := redislockCmd(t, nil, args("status", conn, key)...); st.code != exitUnavailable {
		t.Errorf("status with two masters of 3 dead: exit %d, want %d; stderr: %s", st.code, exitUnavailable, st.stderr)
	}
}

// TestReleaseQuorum: "release" with three --redis releases the lock of a
// run that died (SIGKILL) on every master, refuses another token, and
// finds it not held (3) the second time.
func TestReleaseQuorum(t *testing.T) {
	t.Parallel()
	_, clients, conn := quorumMasters(t, 3)
	key := redistest.Key(t, "lock")
	env, a := runArgs(conn, []string{"--ttl", "1m"}, key, "hold", "0")
	holder := start(t, env, a...)
	token := parseEnvLine(t, holder).token
	holder.expect("ready")
	if err := holder.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	holder.wait()
	if n := heldOn(t, clients, key, token); n != 3 {
		t.Fatalf("after the run died, %s held on %d of 3 masters, want 3 (until its TTL)", key, n)
	}

	r := redislockCmd(t, nil, args("release", conn, key, "--token", "not-"+token)...)
	if r.code != exitNotHeld || heldOn(t, clients, key, token) != 3 {
		t.Errorf("release with another token: exit %d (want %d), stderr %q; the lock must stay on every master", r.code, exitNotHeld, r.stderr)
	}
	r = redislockCmd(t, nil, args("release", conn, key, "--token", token)...)
	if r.code != 0 || r.stdout != "released "+key+" (on 3 of 3 masters)\n" {
		t.Errorf("release: exit %d, stdout %q, stderr %q; want 0 and one line", r.code, r.stdout, r.stderr)
	}
	for i, c := range clients {
		if exists(t, c, key) {
			t.Errorf("master %d still has %s after release", i, key)
		}
	}
	if r := redislockCmd(t, nil, args("release", conn, key, "--token", token)...); r.code != exitNotHeld {
		t.Errorf("second release: exit %d, want %d; stderr: %s", r.code, exitNotHeld, r.stderr)
	}
}

// TestQuorumUsage: flags that cannot make a quorum, or a run on it, are
// refused before anything is sent, in one line (exit 2).
func TestQuorumUsage(t *testing.T) {
	t.Parallel()
	three := []string{"--redis", "127.0.0.1:1", "--redis", "127.0.0.1:2", "--redis", "127.0.0.1:3"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"two masters", []string{"run", "--redis", "127.0.0.1:1", "--redis", "127.0.0.1:2", "k", "--", "true"}, "--redis given 2 times: a quorum needs an odd number of masters, at least 3"},
		{"cluster", append(append([]string{"status", "--cluster"}, three...), "k"), "--cluster cannot be used with several --redis"},
		{"sentinel", append(append([]string{"release", "--sentinel-master", "m", "--token", "t"}, three...), "k"), "--sentinel-master cannot be used with several --redis"},
		{"twice", []string{"run", "--redis", "127.0.0.1:1", "--redis", "redis://127.0.0.1:1", "--redis", "127.0.0.1:3", "k", "--", "true"}, "--redis #1 and #2 name the same server"},
		{"a list", []string{"run", "--redis", "127.0.0.1:1,127.0.0.1:4", "--redis", "127.0.0.1:2", "--redis", "127.0.0.1:3", "k", "--", "true"}, "--redis #1 lists several servers"},
		{"limit", append(append([]string{"run", "--limit", "2"}, three...), "k", "--", "true"), "--limit cannot be used with a quorum"},
		{"shared", append(append([]string{"run", "-s"}, three...), "k", "--", "true"), "--shared cannot be used with a quorum"},
		{"ttl above max-ttl", append(append([]string{"run", "--ttl", "2m"}, three...), "k", "--", "true"), "--ttl 2m0s is above --max-ttl 1m0s"},
		{"max-ttl alone", []string{"run", "--max-ttl", "2m", "--redis", "127.0.0.1:1", "k", "--", "true"}, "--max-ttl is the MaxTTL of a quorum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := redislockCmd(t, nil, tc.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") > 2 || r.stdout != "" {
				t.Errorf("redislock %s: exit %d, stdout %q, stderr %q; want %d and a line containing %q", strings.Join(tc.args, " "), r.code, r.stdout, r.stderr, exitUsage, tc.want)
			}
		})
	}
}

// TestMastersFailed: the errors of the library's Quorum that "run" takes
// for masters failing (exit 69) and for a lock held (exit 75), on real
// servers: a dead majority is a failure; a lock held on every live master,
// with one dead, is held.
func TestMastersFailed(t *testing.T) {
	t.Parallel()
	_, clients, _ := quorumMasters(t, 3)
	ctx := context.Background()
	newQuorum := func(cs ...redislock.RedisClient) *redislock.Quorum {
		q, err := redislock.NewQuorum(cs, nil)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	dead := func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: redistest.DeadAddr(t), DialerRetries: 1, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	key := redistest.Key(t, "lock")
	_, err := newQuorum(clients[0], dead(), dead()).Obtain(ctx, key, time.Second, nil)
	if !errors.Is(err, redislock.ErrNotObtained) || !mastersFailed(err) {
		t.Errorf("obtain with two of three masters dead: %v; want ErrNotObtained that mastersFailed takes for a failure", err)
	}
	lock, err := newQuorum(clients[0], clients[1], clients[2]).Obtain(ctx, key, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Release(ctx) }()
	_, err = newQuorum(clients[0], clients[1], dead()).Obtain(ctx, key, time.Second, nil)
	if !errors.Is(err, redislock.ErrNotObtained) || mastersFailed(err) {
		t.Errorf("obtain of a key held on every live master, one dead: %v; want ErrNotObtained that mastersFailed does not take for a failure", err)
	}
}
