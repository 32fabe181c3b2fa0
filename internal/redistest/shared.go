package redistest

import (
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// shared holds the instances shared by the tests of one test binary, keyed
// by topology and flavor. Each starts on first use; Run stops them all.
var shared struct {
	mu   sync.Mutex
	byID map[string]*instance
}

// instance is one shared instance, started at most once.
type instance struct {
	mu      sync.Mutex
	started bool
	v       any
	stop    func()
	err     error
}

// sharedInstance returns the shared instance id, calling start to create it
// on first use. Callers that come while it starts block until it is ready.
// A failed start is remembered: every later caller gets the same error
// instead of waiting for another timeout.
func sharedInstance[T any](id string, start func() (T, func(), error)) (T, error) {
	shared.mu.Lock()
	if shared.byID == nil {
		shared.byID = make(map[string]*instance)
	}
	in := shared.byID[id]
	if in == nil {
		in = &instance{}
		shared.byID[id] = in
	}
	shared.mu.Unlock()

	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.started {
		in.started = true
		in.v, in.stop, in.err = start()
	}
	if in.err != nil {
		var zero T
		return zero, in.err
	}
	return in.v.(T), nil
}

// stopShared stops every shared instance and forgets them, so that a later
// use starts a new one.
func stopShared() {
	shared.mu.Lock()
	byID := shared.byID
	shared.byID = nil
	shared.mu.Unlock()
	var wg sync.WaitGroup
	for _, in := range byID {
		wg.Go(func() {
			in.mu.Lock()
			defer in.mu.Unlock()
			if in.stop != nil {
				in.stop()
			}
		})
	}
	wg.Wait()
}

// SharedServer returns the standalone server of flavor f shared by the
// tests of this test binary, starting it on first use (blocking until it
// answers PING; other callers block meanwhile). It is stopped by [Run].
// Tests must not kill, restart or reconfigure it, and should name keys with
// [Key]. If the test fails, the tail of the server's log is printed. It
// fails the test if the server cannot be started or has died.
func SharedServer(t testing.TB, f Flavor) *Server {
	t.Helper()
	s, err := sharedServer(f)
	if err != nil {
		t.Fatalf("shared %s: %v", f.serverBin(), err)
	}
	reportOnFailure(t, s, func() string { return s.report(40) })
	if !s.running() {
		t.Fatalf("shared %s has died", s)
	}
	return s
}

// SharedCluster returns the Cluster of flavor f shared by the tests of this
// test binary, starting it on first use (blocking as [NewCluster] does;
// other callers block meanwhile). It is stopped by [Run]. Tests must not
// kill nodes or force failovers on it: use [NewCluster] for that. If the test
// fails, the tail of every node's log is printed. It fails the test if the
// cluster cannot be started or a node has died.
func SharedCluster(t testing.TB, f Flavor) *Cluster {
	t.Helper()
	c, err := sharedInstance("cluster/"+string(f), func() (*Cluster, func(), error) {
		c, err := startCluster(f)
		if err != nil {
			return nil, nil, err
		}
		return c, c.stop, nil
	})
	if err != nil {
		t.Fatalf("shared %s cluster: %v", f, err)
	}
	reportOnFailure(t, c, func() string { return c.report(15) })
	for _, n := range c.nodes {
		if !n.running() {
			t.Fatalf("shared %s cluster: node %s has died", f, n)
		}
	}
	return c
}

// SharedSentinel returns the Sentinel setup of flavor f shared by the tests
// of this test binary, starting it on first use (blocking as [NewSentinel]
// does; other callers block meanwhile). It is stopped by [Run]. Tests must
// not kill servers or force failovers on it: use [NewSentinel] for that. If
// the test fails, the tail of every log is printed. It fails the test if the
// setup cannot be started or a process has died.
func SharedSentinel(t testing.TB, f Flavor) *Sentinel {
	t.Helper()
	s, err := sharedInstance("sentinel/"+string(f), func() (*Sentinel, func(), error) {
		s, err := startSentinel(f)
		if err != nil {
			return nil, nil, err
		}
		return s, s.stop, nil
	})
	if err != nil {
		t.Fatalf("shared %s sentinel: %v", f, err)
	}
	reportOnFailure(t, s, func() string { return s.report(15) })
	for _, p := range append(s.Servers(), s.sentinels...) {
		if !p.running() {
			t.Fatalf("shared %s sentinel: %s has died", f, p)
		}
	}
	return s
}

// Standalone returns a new client of the shared standalone Redis server
// ([SharedServer] with [Redis]), starting the server on first use. Cleanup
// closes the client.
func Standalone(t testing.TB) *redis.Client {
	t.Helper()
	return SharedServer(t, Redis).Client(t)
}

// SharedAddr returns the address of the shared standalone server of flavor
// f, starting it on first use, for code that has no testing.TB, such as
// runnable examples:
//
//	func TestMain(m *testing.M) {
//		addr, err := redistest.SharedAddr(redistest.Redis)
//		...
//		os.Exit(redistest.Run(m))
//	}
//
// The server is stopped by [Run].
func SharedAddr(f Flavor) (string, error) {
	s, err := sharedServer(f)
	if err != nil {
		return "", err
	}
	return s.Addr(), nil
}

// sharedServer starts, or returns, the shared standalone server of flavor f.
func sharedServer(f Flavor) (*Server, error) {
	return sharedInstance("server/"+string(f), func() (*Server, func(), error) {
		s, err := startServer(f, nil)
		if err != nil {
			return nil, nil, err
		}
		return s, s.stop, nil
	})
}
