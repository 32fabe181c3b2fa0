package redistest

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// allFlavors is every flavor, for tests of the harness itself.
var allFlavors = []Flavor{Redis, Valkey, Redis8, Valkey9}

func TestNewServer(t *testing.T) {
	for _, f := range allFlavors {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			// Extra arguments reach the server. Not 1mb, as once: a fresh
			// Valkey uses close to that, and under load its client buffers
			// took it over, which refused the SET below (OOM).
			s := NewServer(t, f, "--maxmemory", "64mb")
			if s.Port() == 6379 || s.Port() > maxPort {
				t.Errorf("port %d, want not 6379 and at most %d", s.Port(), maxPort)
			}
			c := s.Client(t)
			if err := c.Set(ctx, Key(t, "k"), "v", 0).Err(); err != nil {
				t.Fatalf("SET: %v", err)
			}
			if got, err := c.Get(ctx, Key(t, "k")).Result(); err != nil || got != "v" {
				t.Fatalf("GET = %q, %v; want \"v\", nil", got, err)
			}
			// --enable-debug-command local
			if err := c.Do(ctx, "DEBUG", "SLEEP", "0").Err(); err != nil {
				t.Errorf("DEBUG SLEEP 0: %v", err)
			}
			if got, err := c.ConfigGet(ctx, "maxmemory").Result(); err != nil || got["maxmemory"] != "67108864" {
				t.Errorf("CONFIG GET maxmemory = %v, %v; want 67108864", got, err)
			}
			if got, err := c.ConfigGet(ctx, "save").Result(); err != nil || got["save"] != "" {
				t.Errorf("CONFIG GET save = %v, %v; want \"\"", got, err)
			}
			if !strings.Contains(s.LogTail(100), "eady to accept connections") {
				t.Errorf("log tail does not show the server ready:\n%s", s.LogTail(100))
			}

			pid := s.proc.cmd.Process.Pid
			s.Kill()
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("after Kill, kill(%d, 0) = %v, want ESRCH (reaped)", pid, err)
			}
			if err := ping(s.Addr()); err == nil {
				t.Errorf("PING after Kill succeeded")
			}
			s.Restart(t)
			if err := c.Ping(ctx).Err(); err != nil {
				t.Errorf("PING after Restart: %v", err)
			}
		})
	}
}

func TestNewServerCleanup(t *testing.T) {
	t.Parallel()
	f := &fakeTB{TB: t}
	var s *Server
	f.run(func() { s = NewServer(f, Redis) })
	if s == nil {
		t.Fatalf("NewServer failed: %s", f.fatal)
	}
	f.failed = true // as if the test had failed
	f.cleanup()
	if s.running() {
		t.Errorf("server still running after cleanup")
	}
	if _, err := os.Stat(s.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory %s not removed: %v", s.Dir(), err)
	}
	if logs := strings.Join(f.logs, "\n"); !strings.Contains(logs, "eady to accept connections") {
		t.Errorf("failed test did not print the server log; logs:\n%s", logs)
	}
}

func TestMissingBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, tc := range []struct {
		f    Flavor
		want string
	}{
		{Redis, "redis-server not found in PATH: install it with `apt-get install redis-server redis-tools`"},
		{Valkey, "valkey-server not found in PATH: install it from bookworm-backports with `apt-get install -t bookworm-backports valkey-server valkey-tools`"},
	} {
		f := &fakeTB{TB: t}
		f.run(func() { NewServer(f, tc.f) })
		if !strings.Contains(f.fatal, tc.want) {
			t.Errorf("NewServer(%s) without binary: Fatal(%q), want it to contain %q", tc.f, f.fatal, tc.want)
		}
		f.cleanup()
	}
}

// A flavor from sid that was never fetched fails the test (not a skip),
// naming the script that fetches it; so does its Cluster.
func TestMissingSidServers(t *testing.T) {
	t.Setenv(ServersEnv, t.TempDir())
	for _, f := range []Flavor{Redis8, Valkey9} {
		for name, start := range map[string]func(testing.TB){
			"NewServer":  func(tb testing.TB) { NewServer(tb, f) },
			"NewCluster": func(tb testing.TB) { NewCluster(tb, f) },
		} {
			ft := &fakeTB{TB: t}
			ft.run(func() { start(ft) })
			want := string(f) + ": "
			if !ft.failed || !strings.Contains(ft.fatal, want) || !strings.Contains(ft.fatal, "scripts/install-sid-servers.sh") {
				t.Errorf("%s(%s) with nothing fetched: failed=%v, Fatal(%q); want a failure naming %q and scripts/install-sid-servers.sh", name, f, ft.failed, ft.fatal, want)
			}
			ft.cleanup()
		}
	}
}

func TestServersDir(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory:", err) // the fallback cannot be checked
	}
	for _, tc := range []struct {
		env, xdg, want string
	}{
		{"/srv/servers", "/x", "/srv/servers"},
		{"", "/x", "/x/redislock/servers"},
		{"", "", filepath.Join(home, ".cache", "redislock", "servers")},
	} {
		t.Setenv(ServersEnv, tc.env)
		t.Setenv("XDG_CACHE_HOME", tc.xdg)
		if got := ServersDir(); got != tc.want {
			t.Errorf("ServersDir() with %s=%q XDG_CACHE_HOME=%q = %q, want %q", ServersEnv, tc.env, tc.xdg, got, tc.want)
		}
	}
}

func TestSharedServer(t *testing.T) {
	t.Parallel()
	a, b := SharedServer(t, Redis), SharedServer(t, Redis)
	if a != b {
		t.Errorf("SharedServer returned %s then %s, want the same server", a, b)
	}
	if err := Standalone(t).Ping(context.Background()).Err(); err != nil {
		t.Errorf("Standalone: PING: %v", err)
	}
}

func TestTailLines(t *testing.T) {
	for _, tc := range []struct {
		text string
		n    int
		want string
	}{
		{"", 3, ""},
		{"a\n", 3, "a\n"},
		{"a\nb\nc\nd\n", 2, "c\nd\n"},
		{"a\nb", 5, "a\nb\n"},
	} {
		if got := tailLines(tc.text, tc.n); got != tc.want {
			t.Errorf("tailLines(%q, %d) = %q, want %q", tc.text, tc.n, got, tc.want)
		}
	}
}

func TestNewServerBadFlag(t *testing.T) {
	t.Parallel()
	f := &fakeTB{TB: t}
	f.run(func() { NewServer(f, Redis, "--no-such-directive", "1") })
	defer f.cleanup()
	if !strings.Contains(f.fatal, "did not start") || !strings.Contains(f.fatal, "no-such-directive") {
		t.Errorf("NewServer with a bad flag: Fatal(%q), want it to say the server did not start and show its output", f.fatal)
	}
}

func TestLaunchRetriesTakenPort(t *testing.T) {
	t.Parallel()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Close() }()
	heldPort := held.Addr().(*net.TCPAddr).Port
	calls := 0
	s, err := launch(serverSpec{
		flavor: Redis,
		label:  "retry-test",
		args: func(port int, dir string) ([]string, error) {
			calls++
			if calls == 1 {
				port = heldPort // as if another process took the port meanwhile
			}
			return dataArgs(port, dir), nil
		},
	})
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	defer s.stop()
	if calls != 2 {
		t.Errorf("args called %d times, want 2 (one retry)", calls)
	}
	if err := ping(s.Addr()); err != nil {
		t.Errorf("PING: %v", err)
	}
}
