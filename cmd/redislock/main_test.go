package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/redistest"
)

// binary is the redislock binary under test, built by TestMain.
var binary string

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		// The test binary is also the command that "run" runs.
		os.Exit(helperMain(mode, os.Args[1:]))
	}
	os.Exit(redistest.Run(buildFirst{m}))
}

// buildFirst builds the binary before the tests run, and removes it after.
type buildFirst struct{ m *testing.M }

func (b buildFirst) Run() int {
	dir, err := os.MkdirTemp("", "redislock-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary directory: nothing to do if it stays
	binary = filepath.Join(dir, "redislock")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, ".")...) //nolint:gosec // go build of this package
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	return b.m.Run()
}

// procTimeout bounds every wait for a redislock process or a line of its
// output: far above what any should take, so that a hang fails the test
// rather than the whole binary's -timeout.
const procTimeout = 20 * time.Second

// proc is a redislock process started by a test.
type proc struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // the lines of its stdout (its command's included)
	stderr *syncBuffer
	exited chan struct{}
	code   int
	began  time.Time
}

// start starts the binary with args and env (added to the test's own),
// and stops it, if still running, at the end of the test.
func start(t testing.TB, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binary, args...) //nolint:gosec // the binary under test
	// A binary built with -race sleeps a second at exit by default, and so
	// does the test binary as a helper command.
	cmd.Env = append(append(os.Environ(), "GORACE=atexit_sleep_ms=0"), env...)
	p := &proc{t: t, cmd: cmd, lines: make(chan string, 100), stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = stdin
	p.began = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var reading sync.WaitGroup
	reading.Go(func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	})
	go func() {
		reading.Wait() // Wait closes stdout: read it all first
		err := cmd.Wait()
		p.code = cmd.ProcessState.ExitCode()
		if err != nil && p.code < 0 {
			p.code = -1
		}
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// line waits for the next line of stdout and returns it; it fails the test
// if none comes in time.
func (p *proc) line() string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("redislock %s: stdout closed before the expected line; stderr:\n%s", p.args(), p.stderr)
		}
		return l
	case <-time.After(procTimeout):
		p.t.Fatalf("redislock %s: no line on stdout in %v; stderr:\n%s", p.args(), procTimeout, p.stderr)
	}
	return ""
}

// expect waits for a line of stdout that starts with prefix, and returns the
// rest of it.
func (p *proc) expect(prefix string) string {
	p.t.Helper()
	l := p.line()
	rest, ok := strings.CutPrefix(l, prefix)
	if !ok {
		p.t.Fatalf("redislock %s: stdout line = %q, want it to start with %q; stderr:\n%s", p.args(), l, prefix, p.stderr)
	}
	return rest
}

// wait waits for the process to exit and returns its exit code (-1 if a
// signal killed it).
func (p *proc) wait() int {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.code
	case <-time.After(procTimeout):
		p.t.Fatalf("redislock %s did not exit in %v; stderr:\n%s", p.args(), procTimeout, p.stderr)
	}
	return 0
}

// running reports whether the process has not exited yet.
func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// rest returns what remains of stdout after the process exited.
func (p *proc) rest() string {
	var b strings.Builder
	for l := range p.lines {
		b.WriteString(l + "\n")
	}
	return b.String()
}

func (p *proc) args() string { return strings.Join(p.cmd.Args[1:], " ") }

// result is a finished redislock process.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// redislock runs the binary with args to its end.
func redislockCmd(t testing.TB, env []string, args ...string) result {
	t.Helper()
	p := start(t, env, args...)
	_ = p.stdin.Close()
	code := p.wait()
	return result{code: code, stdout: p.rest(), stderr: p.stderr.String(), took: time.Since(p.began)}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// topology is a kind of deployment the binary is tested against.
type topology struct {
	name string
	// conn returns the connection flags for the binary and a client for the
	// test's own checks.
	conn func(t testing.TB) (flags []string, client redis.UniversalClient)
}

var topologies = []topology{
	{name: "standalone", conn: func(t testing.TB) ([]string, redis.UniversalClient) {
		s := redistest.SharedServer(t, redistest.Redis)
		return []string{"--redis", "redis://" + s.Addr()}, s.Client(t)
	}},
	{name: "cluster", conn: func(t testing.TB) ([]string, redis.UniversalClient) {
		c := redistest.SharedCluster(t, redistest.Redis)
		return []string{"--cluster", "--redis", "redis://" + strings.Join(c.Addrs(), ",")}, c.Client(t)
	}},
}

// forEachTopology runs test as parallel subtests, one per topology.
func forEachTopology(t *testing.T, test func(t *testing.T, conn []string, rdb redis.UniversalClient)) {
	t.Parallel()
	for _, tp := range topologies {
		t.Run(tp.name, func(t *testing.T) {
			t.Parallel()
			conn, rdb := tp.conn(t)
			test(t, conn, rdb)
		})
	}
}

// args joins a subcommand, the connection flags and the rest.
func args(sub string, conn []string, rest ...string) []string {
	return append(append([]string{sub}, conn...), rest...)
}

// exists reports whether key exists.
func exists(t testing.TB, rdb redis.UniversalClient, key string) bool {
	t.Helper()
	n, err := rdb.Exists(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("EXISTS %s: %v", key, err)
	}
	return n == 1
}
