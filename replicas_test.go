package redislock_test

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

// newReplicated starts a master and one replica of it, and waits until the
// master counts the replica as online (after the replica's first ACK).
func newReplicated(t *testing.T) (master, replica *redistest.Server) {
	t.Helper()
	master = redistest.NewServer(t, redistest.Redis, "--repl-diskless-sync-delay", "0")
	replica = redistest.NewServer(t, redistest.Redis, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port()))
	mc := master.Client(t)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(mc.Info(context.Background(), "replication").Val(), "state=online"); {
		if time.Now().After(deadline) {
			t.Fatal("the replica did not sync within 10s")
		}
		time.Sleep(10 * time.Millisecond) // polling the replica's state
	}
	return master, replica
}

func TestMinReplicas(t *testing.T) {
	t.Parallel()
	master, replica := newReplicated(t)
	rdb := master.Client(t)
	ctx := context.Background()
	key, fence := "locks:job", "locks:job:fence"

	start := time.Now()
	lock, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{FenceKey: fence, MinReplicas: 1})
	if err != nil {
		t.Fatalf("Obtain with MinReplicas 1 and one replica: %v", err)
	}
	t.Logf("Obtain with MinReplicas 1 took %v", time.Since(start))
	// The replica has the lock as soon as Obtain returns.
	if got, want := replica.Client(t).Get(ctx, key).Val(), mustGet(t, rdb, key); got != want {
		t.Errorf("replica has %q, master %q", got, want)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}

	// Two replicas asked, one there: the lock is taken, not confirmed, and
	// given back.
	start = time.Now()
	_, err = redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{FenceKey: fence, MinReplicas: 2, ReplicaTimeout: 50 * time.Millisecond})
	var re *redislock.ReplicaError
	if !errors.As(err, &re) || !errors.Is(err, redislock.ErrNotReplicated) || re.Want != 2 || re.Got != 1 {
		t.Fatalf("Obtain with MinReplicas 2 and one replica: got %v, want a *ReplicaError 1 of 2", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > 5*time.Second {
		t.Errorf("failed after %v, want about the ReplicaTimeout of 50ms", d)
	}
	if mustExist(t, rdb, key) {
		t.Error("the unconfirmed lock was not released")
	}

	// A lock held by another is reported as such, without waiting.
	other, err := redislock.Obtain(ctx, rdb, key, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if _, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{MinReplicas: 2, ReplicaTimeout: time.Second}); !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("Obtain of a held lock: got %v, want ErrNotObtained", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("Obtain of a held lock waited %v for replicas", d)
	}
	_ = other.Release(ctx)

	// The replica gone: not confirmed.
	replica.Kill()
	_, err = redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{MinReplicas: 1, ReplicaTimeout: 20 * time.Millisecond})
	if !errors.As(err, &re) || re.Got != 0 {
		t.Errorf("Obtain with the replica killed: got %v, want a *ReplicaError 0 of 1", err)
	}
	if mustExist(t, rdb, key) {
		t.Error("the unconfirmed lock was not released")
	}
}

func TestMinReplicasCluster(t *testing.T) {
	t.Parallel()
	rdb := redistest.SharedCluster(t, redistest.Redis).Client(t)
	ctx := context.Background()
	key, fence := redistest.Key(t, "lock"), redistest.Key(t, "fence")
	lock, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{FenceKey: fence, MinReplicas: 1, ReplicaTimeout: time.Second})
	if err != nil {
		t.Fatalf("Obtain with MinReplicas 1 on a Cluster: %v", err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

// Clients that cannot run WAIT on the script's connection are refused
// before anything is sent.
func TestMinReplicasUnsupportedClient(t *testing.T) {
	t.Parallel()
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	_, err := redislock.Obtain(context.Background(), ring, "locks:job", time.Minute, &redislock.Options{MinReplicas: 1})
	if err == nil || !strings.Contains(err.Error(), "MinReplicas") {
		t.Errorf("got %v, want a refusal naming MinReplicas", err)
	}
}
