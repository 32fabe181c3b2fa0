package redistest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is one redis-server or valkey-server process on 127.0.0.1, with its
// own temporary directory holding its log and any files it writes. It is
// used for standalone servers, Cluster nodes, Sentinel data nodes and
// sentinels alike. Its methods are safe for concurrent use.
type Server struct {
	flavor Flavor
	label  string
	port   int
	dir    string
	args   []string

	mu    sync.Mutex
	proc  *process
	admin *redis.Client
}

// NewServer starts a standalone server of flavor f for the test alone, with
// the harness's flags (loopback only, a free port, no persistence, DEBUG
// allowed, its own directory and log) followed by args, which may override
// them (for example "--maxmemory", "1mb"). It blocks until the server answers
// PING, for at most 30 s. Cleanup kills the server, reaps it and removes its
// directory; if the test failed, the tail of its log is printed first.
// A missing binary or a server that does not start fails the test.
func NewServer(t testing.TB, f Flavor, args ...string) *Server {
	t.Helper()
	s, err := startServer(f, args)
	return own(t, s, err, 40)
}

// startServer starts a standalone server with extra args appended to the
// harness's flags.
func startServer(f Flavor, extra []string) (*Server, error) {
	return launch(serverSpec{
		flavor: f,
		label:  f.serverBin(),
		args: func(port int, dir string) ([]string, error) {
			return append(dataArgs(port, dir), extra...), nil
		},
	})
}

// dataArgs are the flags of every data server (not sentinels).
func dataArgs(port int, dir string) []string {
	return []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
		"--logfile", filepath.Join(dir, "log"),
		"--enable-debug-command", "local",
	}
}

// serverSpec describes a server for launch.
type serverSpec struct {
	flavor Flavor
	label  string // names its directory, as in "redis-server" or "valkey-cluster-node"
	bus    bool   // a Cluster node: port+10000 must be free too
	// args returns the server's command line for port; it may write files
	// (a sentinel's config) into dir.
	args func(port int, dir string) ([]string, error)
}

// launch creates a directory, picks a free port and starts the server,
// trying another port when the chosen one was taken in the meantime. It
// blocks until the server answers PING. On error nothing is left running and
// the directory is removed.
func launch(spec serverSpec) (*Server, error) {
	if _, err := spec.flavor.server(); err != nil {
		return nil, err
	}
	dir, err := newDir(spec.label)
	if err != nil {
		return nil, err
	}
	const attempts = 10
	for attempt := 1; ; attempt++ {
		s, err := launchOnce(spec, dir)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errAddrInUse) || attempt == attempts {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		// Start the next attempt from an empty directory: a Cluster node
		// may have written nodes.conf with the port it could not bind.
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("redistest: %w", err)
		}
		if err := os.Mkdir(dir, 0o700); err != nil {
			return nil, fmt.Errorf("redistest: %w", err)
		}
	}
}

func launchOnce(spec serverSpec, dir string) (*Server, error) {
	port, err := freePort(spec.bus)
	if err != nil {
		return nil, err
	}
	args, err := spec.args(port, dir)
	if err != nil {
		return nil, err
	}
	s := &Server{flavor: spec.flavor, label: spec.label, port: port, dir: dir, args: args}
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

// errAddrInUse means the server could not bind its port.
var errAddrInUse = errors.New("address already in use")

// start runs the server process and blocks until it answers PING.
func (s *Server) start() error {
	bin, err := s.flavor.server()
	if err != nil {
		return err
	}
	logOff, stdoutOff := fileSize(s.logPath()), fileSize(s.stdoutPath())
	out, err := os.OpenFile(s.stdoutPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	path, args := bin.with(s.args...)
	p, err := startProcess(path, args, s.dir, out)
	_ = out.Close() // the child has its own descriptor
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	if err := waitPing(s.Addr(), p, readyTimeout); err != nil {
		p.kill()
		if strings.Contains(readFrom(s.logPath(), logOff)+readFrom(s.stdoutPath(), stdoutOff), "Address already in use") {
			return fmt.Errorf("redistest: %s on %s: %w", s.flavor.serverBin(), s.Addr(), errAddrInUse)
		}
		return fmt.Errorf("redistest: %s on %s did not start: %w\n%s", s.flavor.serverBin(), s.Addr(), err, s.report(40))
	}
	return nil
}

// Addr returns the server's address, "127.0.0.1:PORT". It does not change
// when the server is killed or restarted.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Port returns the server's TCP port.
func (s *Server) Port() int { return s.port }

// Dir returns the server's working directory, which holds its log ("log").
// It is removed when the server is stopped.
func (s *Server) Dir() string { return s.dir }

// Flavor returns the server's flavor.
func (s *Server) Flavor() Flavor { return s.flavor }

// String returns the binary and address, as in "redis-server 127.0.0.1:40123".
func (s *Server) String() string { return s.flavor.serverBin() + " " + s.Addr() }

// Options returns new go-redis options for a client of this server, with
// go-redis's defaults apart from Addr. The caller owns them and may change
// them before calling redis.NewClient.
func (s *Server) Options() *redis.Options {
	return &redis.Options{Addr: s.Addr()}
}

// Client returns a new go-redis client of this server with [Server.Options].
// It does not block: connections are made on first use. Cleanup closes it.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(s.Options())
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Kill sends SIGKILL to the server and blocks until the process is reaped.
// Its address then refuses connections. It does nothing if the server is not
// running. Never kill a shared server.
func (s *Server) Kill() {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p != nil {
		p.kill()
	}
}

// Restart kills the server if it is running and starts it again on the same
// port with the same directory and flags (a Cluster node keeps its identity
// from nodes.conf; data is lost, as persistence is off). It blocks until the
// server answers PING, for at most 30 s, and fails the test if it does not
// (for example because another process took the port meanwhile).
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
}

// running reports whether the process is alive.
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && !s.proc.exited()
}

// adminClient returns the harness's own client of the server: no retries,
// one dial attempt, RESP2. It lives until stop.
func (s *Server) adminClient() *redis.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admin == nil {
		s.admin = redis.NewClient(adminOptions(s.Addr()))
	}
	return s.admin
}

func adminOptions(addr string) *redis.Options {
	return &redis.Options{
		Addr:            addr,
		Protocol:        2,
		DisableIdentity: true,
		MaxRetries:      -1,
		DialTimeout:     time.Second,
		DialerRetries:   1,
		ReadTimeout:     commandTimeout,
		WriteTimeout:    commandTimeout,
		PoolSize:        4,
	}
}

// stop kills the server, closes the admin client and removes the directory.
func (s *Server) stop() {
	s.Kill()
	s.mu.Lock()
	admin := s.admin
	s.admin = nil
	s.mu.Unlock()
	if admin != nil {
		_ = admin.Close()
	}
	_ = os.RemoveAll(s.dir)
}

func (s *Server) logPath() string { return filepath.Join(s.dir, "log") }

func (s *Server) stdoutPath() string { return filepath.Join(s.dir, "stdout") }

// LogTail returns the last n lines of the server's log, preceded by anything
// the process wrote to stdout or stderr (startup errors land there).
func (s *Server) LogTail(n int) string {
	out := tailLines(readFrom(s.stdoutPath(), 0), n)
	log := tailLines(readFrom(s.logPath(), 0), n)
	switch {
	case out == "":
		return log
	case log == "":
		return "(stdout/stderr)\n" + out
	default:
		return "(stdout/stderr)\n" + out + "(log)\n" + log
	}
}

// report is LogTail with a header, for test output.
func (s *Server) report(n int) string {
	return fmt.Sprintf("--- last %d lines of the log of %s (%s) ---\n%s", n, s, s.label, s.LogTail(n))
}

// fileSize returns the size of path, 0 if it does not exist.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readFrom returns the content of path from offset on, at most the last 64
// KiB of it; "" if it cannot be read.
func readFrom(path string, offset int64) string {
	f, err := os.Open(path) //nolint:gosec // a log of the harness's own server
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }() // read only
	const limit = 64 << 10
	if size := fileSize(path); size-offset > limit {
		offset = size - limit
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// tailLines returns the last n lines of text, each ending in a newline.
func tailLines(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return ""
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}

// serverAt returns the server of servers listening on addr, or nil.
func serverAt(servers []*Server, addr string) *Server {
	for _, s := range servers {
		if s.Addr() == addr {
			return s
		}
	}
	return nil
}
