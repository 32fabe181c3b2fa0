package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/redistest"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(soakHelperEnv); spec != "" {
		os.Exit(soakHelperMain(spec)) // a helper process of TestSoakProcesses
	}
	os.Exit(redistest.Run(&examplesOnSharedServer{m}))
}

// examplesOnSharedServer points the runnable examples (example_test.go) at
// the shared redis-server before the tests and examples run.
type examplesOnSharedServer struct{ *testing.M }

func (m *examplesOnSharedServer) Run() int {
	addr, err := redistest.SharedAddr(redistest.Redis)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting redis-server for the examples:", err)
		return 1
	}
	redisAddr = addr
	return m.M.Run()
}

// forEachTopology runs fn as a subtest on every topology of the harness
// (standalone Redis and Valkey, Cluster, Sentinel), each with a fresh client
// of the shared instance. Tests name their keys with redistest.Key, so they
// can share the servers and run in parallel.
func forEachTopology(t *testing.T, fn func(t *testing.T, rdb redis.UniversalClient)) {
	t.Helper()
	redistest.EachTopology(t, fn)
}

// faultyClient wraps a real client at the client boundary: it counts the
// script calls that reach Redis and can fail the next n of them with an
// error of the caller's choice, without sending them.
type faultyClient struct {
	redis.Scripter

	mu    sync.Mutex
	sent  int   // script calls passed on to Redis
	fails int   // calls still to fail
	err   error // the error they fail with
}

func newFaultyClient(rdb redis.Scripter) *faultyClient {
	return &faultyClient{Scripter: rdb}
}

// failNext makes the next n script calls fail with err.
func (f *faultyClient) failNext(n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails, f.err = n, err
}

// calls returns how many script calls reached Redis.
func (f *faultyClient) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sent
}

// intercept returns a failed command when a failure is due, else nil after
// counting the call as sent.
func (f *faultyClient) intercept(ctx context.Context) *redis.Cmd {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fails > 0 {
		f.fails--
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(f.err)
		return cmd
	}
	f.sent++
	return nil
}

func (f *faultyClient) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	if cmd := f.intercept(ctx); cmd != nil {
		return cmd
	}
	return f.Scripter.Eval(ctx, script, keys, args...)
}

func (f *faultyClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if cmd := f.intercept(ctx); cmd != nil {
		return cmd
	}
	return f.Scripter.EvalSha(ctx, sha, keys, args...)
}

func (f *faultyClient) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	if cmd := f.intercept(ctx); cmd != nil {
		return cmd
	}
	return f.Scripter.EvalRO(ctx, script, keys, args...)
}

func (f *faultyClient) EvalShaRO(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if cmd := f.intercept(ctx); cmd != nil {
		return cmd
	}
	return f.Scripter.EvalShaRO(ctx, sha, keys, args...)
}

// errTransient is what a dropped connection looks like to go-redis callers:
// not a Redis error reply, so redislock treats it as transient.
var errTransient = errors.New("test: connection reset by peer")

// mustGet returns the value of key, or "" when it does not exist.
func mustGet(t *testing.T, rdb redis.Cmdable, key string) string {
	t.Helper()
	v, err := rdb.Get(context.Background(), key).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	return v
}

// mustExist reports whether key exists.
func mustExist(t *testing.T, rdb redis.Cmdable, key string) bool {
	t.Helper()
	return redistest.Exists(t, rdb, key)
}

// expireNow makes key expire within a millisecond (PEXPIRE key 1) and waits
// until it is gone, instead of sleeping through a TTL.
func expireNow(t *testing.T, rdb redis.Cmdable, key string) {
	t.Helper()
	redistest.ExpireNow(t, rdb, key)
}

// replyError is a Redis error reply, as go-redis returns it.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// luaSource returns the files at paths (relative to the module root, such
// as "lua/obtain.lua") joined by newlines, as scripts.go joins a script's
// parts (internal/script.New).
func luaSource(t testing.TB, paths ...string) string {
	t.Helper()
	parts := make([]string, len(paths))
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		parts[i] = string(b)
	}
	return strings.Join(parts, "\n")
}

// commandCounts returns the commands the server ran since its statistics
// were last reset (INFO commandstats), without a test's own (INFO, CLIENT,
// CONFIG, the handshake's HELLO, PING).
func commandCounts(t *testing.T, rdb *redis.Client) map[string]int64 {
	t.Helper()
	stats, err := rdb.InfoMap(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, fields := range stats {
		for name, v := range fields {
			cmd := strings.TrimPrefix(name, "cmdstat_")
			if strings.HasPrefix(cmd, "info") || strings.HasPrefix(cmd, "client") || strings.HasPrefix(cmd, "config") || cmd == "hello" || cmd == "ping" {
				continue
			}
			n, err := strconv.ParseInt(strings.TrimPrefix(strings.Split(v, ",")[0], "calls="), 10, 64)
			if err != nil {
				t.Fatalf("commandstats %s: %q", name, v)
			}
			got[cmd] = n
		}
	}
	return got
}
