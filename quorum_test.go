package redislock_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// quorumMaxTTL is the MaxTTL of the tests' quorums: a master without
// persistence grants nothing for that long after it started.
const quorumMaxTTL = time.Second

// quorumNodes starts n masters of flavor, with AOF (appendfsync always)
// when persistent, and returns them with a client of each that fails fast
// once its master is gone (one dial, no resend, reads bounded by the
// context).
func quorumNodes(t *testing.T, n int, persistent bool) ([]*redistest.Server, []redislock.RedisClient) {
	t.Helper()
	var args []string
	if persistent {
		args = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	servers := make([]*redistest.Server, n)
	clients := make([]redislock.RedisClient, n)
	for i := range n {
		servers[i] = redistest.NewServer(t, redistest.Redis, args...)
		c := redis.NewClient(&redis.Options{Addr: servers[i].Addr(), DialTimeout: time.Second, DialerRetries: 1, MaxRetries: -1, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = c.Close() })
		clients[i] = c
	}
	if !persistent {
		// A master up for less than MaxTTL may have lost the keys of a lock
		// that is live elsewhere: it takes nothing yet (docs/quorum.md).
		time.Sleep(quorumMaxTTL + time.Second)
	}
	return servers, clients
}

func newQuorum(t *testing.T, clients []redislock.RedisClient) *redislock.Quorum {
	t.Helper()
	q, err := redislock.NewQuorum(clients, &redislock.QuorumOptions{MaxTTL: quorumMaxTTL})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// A quorum's locks have Lock's method set: obtained, refreshed, measured,
// kept alive and released on a majority, with fence tokens that increase.
func TestQuorumLock(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(map[int]string{3: "3 masters", 5: "5 masters"}[n], func(t *testing.T) {
			t.Parallel()
			_, clients := quorumNodes(t, n, true)
			q := newQuorum(t, clients)
			ctx := context.Background()
			key, fence := redistest.Key(t, "lock"), redistest.Key(t, "fence")
			opt := &redislock.Options{FenceKey: fence, Metadata: "m"}
			var last int64
			for i := range 3 {
				lock, err := q.Obtain(ctx, key, 900*time.Millisecond, opt)
				if err != nil {
					t.Fatalf("Obtain %d: %v", i, err)
				}
				if lock.FenceToken() <= last {
					t.Fatalf("fence token %d after %d", lock.FenceToken(), last)
				}
				last = lock.FenceToken()
				if _, err := q.Obtain(ctx, key, 900*time.Millisecond, nil); !errors.Is(err, redislock.ErrNotObtained) {
					t.Fatalf("a second Obtain = %v, want ErrNotObtained", err)
				}
				if err := lock.Refresh(ctx, 900*time.Millisecond, nil); err != nil {
					t.Fatalf("Refresh: %v", err)
				}
				if ttl, err := lock.TTL(ctx); err != nil || ttl <= 0 || ttl > 900*time.Millisecond {
					t.Fatalf("TTL = %v, %v; want (0, 900ms]", ttl, err)
				}
				ka, err := lock.KeepAlive(300*time.Millisecond, nil)
				if err != nil {
					t.Fatalf("KeepAlive: %v", err)
				}
				if err := lock.Release(ctx); err != nil {
					t.Fatalf("Release: %v", err)
				}
				if !errors.Is(ka.Err(), redislock.ErrKeepAliveStopped) {
					t.Fatalf("keep-alive after Release: %v", ka.Err())
				}
				for j, c := range clients {
					if n := c.(*redis.Client).Exists(ctx, key).Val(); n != 0 {
						t.Fatalf("master %d still has the key after Release", j)
					}
				}
			}
		})
	}
}

// A dead minority does not stop the quorum; a dead majority gives
// ErrNotObtained with nothing left held, and a keep-alive that signals the
// loss.
func TestQuorumNodesDie(t *testing.T) {
	servers, clients := quorumNodes(t, 5, true)
	q := newQuorum(t, clients)
	ctx := context.Background()
	key := redistest.Key(t, "lock")
	lock, err := q.Obtain(ctx, key, 900*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	ka, err := lock.KeepAlive(900*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	servers[0].Kill()
	servers[1].Kill()
	// A minority dead: refreshes go on, and a new lock can be had.
	other, err := q.Obtain(ctx, redistest.Key(t, "other"), 900*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("Obtain with a minority dead: %v", err)
	}
	// Held by another on every live master: not obtained, and no failure
	// of the dead ones reported, as they could not have changed that.
	var opErr *net.OpError
	if _, err := q.Obtain(ctx, other.Key(), 900*time.Millisecond, nil); !errors.Is(err, redislock.ErrNotObtained) || errors.As(err, &opErr) {
		t.Fatalf("Obtain of a key held on every live master = %v, want ErrNotObtained without the dead masters' errors", err)
	}
	_ = other.Release(ctx)
	select {
	case <-ka.Done():
		t.Fatalf("the keep-alive ended with a minority dead: %v", ka.Err())
	case <-time.After(time.Second): // past the TTL: at least two refreshes
	}
	servers[2].Kill()
	recv(t, ka.Done(), "the keep-alive to signal the loss of the majority")
	if !errors.Is(ka.Err(), redislock.ErrLockLost) {
		t.Fatalf("Err = %v, want ErrLockLost", ka.Err())
	}
	if _, err := q.Obtain(ctx, redistest.Key(t, "third"), 900*time.Millisecond, nil); !errors.Is(err, redislock.ErrNotObtained) || !errors.As(err, &opErr) {
		t.Fatalf("Obtain with a majority dead = %v, want ErrNotObtained with the dead masters' errors", err)
	}
	for _, i := range []int{3, 4} {
		if n := clients[i].(*redis.Client).Exists(ctx, redistest.Key(t, "third")).Val(); n != 0 {
			t.Fatalf("master %d holds the key of the failed obtain", i)
		}
	}
}

// Fence tokens keep increasing while each master restarts in turn, with
// its data (AOF) and without it.
func TestQuorumTokensAcrossRestarts(t *testing.T) {
	for _, persistent := range []bool{true, false} {
		t.Run(map[bool]string{true: "aof", false: "no persistence"}[persistent], func(t *testing.T) {
			t.Parallel()
			servers, clients := quorumNodes(t, 5, persistent)
			q := newQuorum(t, clients)
			ctx := context.Background()
			key, fence := redistest.Key(t, "lock"), redistest.Key(t, "fence")
			opt := &redislock.Options{FenceKey: fence, RetryStrategy: redislock.LinearBackoff(20 * time.Millisecond)}
			var last int64
			for round := range 2 {
				for i, s := range servers {
					s.Restart(t)
					// Without persistence the masters restarted in the last
					// MaxTTL take nothing: the obtain waits them out.
					wctx, cancel := context.WithTimeout(ctx, waitTimeout)
					lock, err := q.Obtain(wctx, key, 900*time.Millisecond, opt)
					cancel()
					if err != nil {
						t.Fatalf("round %d, after restarting master %d: %v", round, i, err)
					}
					if lock.FenceToken() <= last {
						t.Fatalf("round %d, after restarting master %d: token %d after %d", round, i, lock.FenceToken(), last)
					}
					last = lock.FenceToken()
					if err := lock.Release(ctx); err != nil {
						t.Fatalf("Release: %v", err)
					}
				}
			}
		})
	}
}

// Bad input is refused before anything is sent.
func TestQuorumBadInput(t *testing.T) {
	a := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	b := redis.NewClient(&redis.Options{Addr: "127.0.0.1:2"})
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:3"})
	d := redis.NewClient(&redis.Options{Addr: "127.0.0.1:4"})
	for name, clients := range map[string][]redislock.RedisClient{
		"two": {a, b}, "four": {a, b, c, d}, "twice": {a, b, a},
	} {
		if _, err := redislock.NewQuorum(clients, nil); !errors.Is(err, redislock.ErrInvalidOption) {
			t.Errorf("NewQuorum with %s clients: %v, want ErrInvalidOption", name, err)
		}
	}
	if _, err := redislock.NewQuorum([]redislock.RedisClient{a, b, nil}, nil); !errors.Is(err, redislock.ErrNilClient) {
		t.Errorf("NewQuorum with a nil client: %v, want ErrNilClient", err)
	}
	q, err := redislock.NewQuorum([]redislock.RedisClient{a, b, c}, &redislock.QuorumOptions{MaxTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := q.Obtain(ctx, "k", 2*time.Second, nil); !errors.Is(err, redislock.ErrInvalidTTL) {
		t.Errorf("a TTL above MaxTTL: %v, want ErrInvalidTTL", err)
	}
	if _, err := q.Obtain(ctx, "k", time.Second, &redislock.Options{MinReplicas: 1}); !errors.Is(err, redislock.ErrInvalidOption) {
		t.Errorf("MinReplicas: %v, want ErrInvalidOption", err)
	}
	if _, err := q.ObtainMulti(ctx, []string{"k", "k"}, time.Second, nil); !errors.Is(err, redislock.ErrInvalidKey) {
		t.Errorf("a repeated key: %v, want ErrInvalidKey", err)
	}
}
