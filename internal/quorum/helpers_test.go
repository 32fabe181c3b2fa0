package quorum

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/redistest"
)

// testMaxTTL is the MaxTTL of the engines of the tests on real servers:
// a node that lost its data recovers for that long.
const testMaxTTL = time.Second

// quorum is N servers of a test's own and an engine over them.
type quorum struct {
	servers []*redistest.Server
	admin   []*redis.Client // the test's own clients, for looking and meddling
	engine  *Engine
}

// persistence is how a test's servers keep their data.
type persistence bool

const (
	persistent persistence = true  // appendonly yes, appendfsync always
	ephemeral  persistence = false // the harness's default: nothing kept
)

// startQuorum starts n servers, cycling through flavors (Redis when none
// is given), with persistence p, and an engine over clients of them. On
// servers without persistence it waits until they have been up long
// enough that a lock key used for the first time is not recovering
// (uptime above MaxTTL + 1 s, as node.lua counts it).
func startQuorum(t *testing.T, n int, p persistence, flavors ...redistest.Flavor) *quorum {
	t.Helper()
	kinds := make([]persistence, n)
	for i := range kinds {
		kinds[i] = p
	}
	return startMixed(t, kinds, flavors...)
}

// startMixed is startQuorum with a persistence for each node.
func startMixed(t *testing.T, kinds []persistence, flavors ...redistest.Flavor) *quorum {
	t.Helper()
	if len(flavors) == 0 {
		flavors = []redistest.Flavor{redistest.Redis}
	}
	q := &quorum{}
	n := len(kinds)
	nodes := make([]redis.Scripter, n)
	for i := range n {
		var args []string
		if kinds[i] == persistent {
			args = []string{"--appendonly", "yes", "--appendfsync", "always"}
		}
		s := redistest.NewServer(t, flavors[i%len(flavors)], args...)
		q.servers = append(q.servers, s)
		nodes[i] = newTestClient(t, s.Addr())
		q.admin = append(q.admin, newTestClient(t, s.Addr()))
	}
	e, err := New(nodes, Config{MaxTTL: testMaxTTL})
	if err != nil {
		t.Fatal(err)
	}
	q.engine = e
	for i, k := range kinds {
		if k == ephemeral {
			q.waitUp(t, i, int(testMaxTTL/time.Second)+2)
		}
	}
	return q
}

// newTestClient returns a client of addr that fails fast when the server
// is gone (one dial, no resend) and whose socket reads end with the
// context's deadline, as docs/quorum.md recommends. Cleanup closes it.
func newTestClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr:                  addr,
		DialTimeout:           time.Second,
		DialerRetries:         1,
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// waitUp waits until node i has been up for seconds.
func (q *quorum) waitUp(t *testing.T, i, seconds int) {
	t.Helper()
	redistest.WaitFor(t, "node "+strconv.Itoa(i)+" up for "+strconv.Itoa(seconds)+"s", 30*time.Second, func() bool {
		up, err := strconv.Atoi(redistest.Info(t, q.admin[i], "server", "uptime_in_seconds"))
		return err == nil && up >= seconds
	})
}

// readRoot returns the content of a file of the root package.
func readRoot(path string) (string, error) {
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(path)))
	return string(b), err
}

// get returns key's value on node i, and whether it exists.
func (q *quorum) get(t *testing.T, i int, key string) (string, bool) {
	t.Helper()
	v, err := q.admin[i].Get(context.Background(), key).Result()
	if err == redis.Nil {
		return "", false
	}
	if err != nil {
		t.Fatalf("GET %s on node %d: %v", key, i, err)
	}
	return v, true
}

// holders returns how many nodes hold key (any value).
func (q *quorum) holders(t *testing.T, key string, skip ...int) int {
	t.Helper()
	n := 0
	for i := range q.admin {
		if contains(skip, i) {
			continue
		}
		if _, ok := q.get(t, i, key); ok {
			n++
		}
	}
	return n
}

func contains(v []int, x int) bool {
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}

// key names a key of test t.
func key(t *testing.T, name string) string { return redistest.Key(t, name) }
