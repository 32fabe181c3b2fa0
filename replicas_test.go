package redislock_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

func TestMinReplicas(t *testing.T) {
	t.Parallel()
	master, replica := redistest.NewReplicated(t, redistest.Redis)
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
	trips := &tripCounter{}
	counted := master.Client(t)
	counted.AddHook(trips)
	if _, err := redislock.Obtain(ctx, counted, key, time.Minute, &redislock.Options{MinReplicas: 2, ReplicaTimeout: time.Second}); !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("Obtain of a held lock: got %v, want ErrNotObtained", err)
	}
	alone, pipelines, _ := trips.get()
	for _, name := range append(slices.Concat(pipelines...), alone...) {
		if name == "wait" || name == "waitaof" {
			t.Errorf("Obtain of a held lock waited for replicas: sent %q, %q", alone, pipelines)
		}
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

	// Two replicas asked of a master that has one, with a wait longer than
	// the client's ReadTimeout: a *ReplicaError, not an i/o timeout.
	opts := redistest.SharedCluster(t, redistest.Redis).Options()
	opts.ReadTimeout = replicaReadTimeout
	slow := redis.NewClusterClient(opts)
	t.Cleanup(func() { _ = slow.Close() })
	_, err = redislock.Obtain(ctx, slow, key, time.Minute, &redislock.Options{FenceKey: fence, MinReplicas: 2, ReplicaTimeout: time.Second})
	var re *redislock.ReplicaError
	if !errors.As(err, &re) || re.Want != 2 || re.Got != 1 {
		t.Errorf("Obtain with MinReplicas 2 on a Cluster with one replica per master, ReadTimeout %v: got %v, want a *ReplicaError 1 of 2", replicaReadTimeout, err)
	}
	if mustExist(t, rdb, key) {
		t.Error("the unconfirmed lock was not released")
	}
}

// Clients that cannot run WAIT on the script's connection are refused
// before anything is sent, with an error that can be matched.
func TestMinReplicasUnsupportedClient(t *testing.T) {
	t.Parallel()
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer func() { _ = ring.Close() }()
	_, err := redislock.Obtain(context.Background(), ring, "locks:job", time.Minute, &redislock.Options{MinReplicas: 1})
	if !errors.Is(err, redislock.ErrUnsupportedClient) || !strings.Contains(err.Error(), "MinReplicas") || !strings.Contains(err.Error(), "*redis.Ring") {
		t.Errorf("got %v, want ErrUnsupportedClient naming MinReplicas and *redis.Ring", err)
	}
}

// Negative MinReplicas or ReplicaTimeout are refused before anything is
// sent.
func TestMinReplicasNegative(t *testing.T) {
	t.Parallel()
	rdb := newFaultyClient(redistest.Standalone(t))
	for _, opt := range []*redislock.Options{
		{MinReplicas: -1},
		{MinReplicas: 1, ReplicaTimeout: -time.Millisecond},
		{ReplicaTimeout: -time.Second},
	} {
		_, err := redislock.Obtain(context.Background(), rdb, redistest.Key(t, "job"), time.Minute, opt)
		if !errors.Is(err, redislock.ErrInvalidOption) {
			t.Errorf("Obtain with MinReplicas %d, ReplicaTimeout %v: got %v, want ErrInvalidOption", opt.MinReplicas, opt.ReplicaTimeout, err)
		}
	}
	if n := rdb.calls(); n != 0 {
		t.Errorf("%d script calls reached Redis, want none", n)
	}
}

// replicaReadTimeout is the ReadTimeout of the clients of the long-wait
// tests: far shorter than go-redis's default of 5 s, so that a WAIT read
// under it fails quickly.
const replicaReadTimeout = 300 * time.Millisecond

// A wait for replicas longer than the client's ReadTimeout ends with a
// *ReplicaError after the ReplicaTimeout, not with an i/o timeout on a
// broken connection. The TTLs are those of issue 11 (default ReplicaTimeout
// a tenth of them); all but the first pass a ReplicaTimeout of 1 s, so
// that the test does not wait a minute.
func TestMinReplicasLongWaitNoReplica(t *testing.T) {
	t.Parallel()
	opts := redistest.SharedServer(t, redistest.Redis).Options()
	opts.ReadTimeout = replicaReadTimeout
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	for _, tt := range []struct {
		ttl, timeout, want time.Duration
	}{
		{10 * time.Second, 0, time.Second},
		{time.Minute, time.Second, time.Second},
		{10 * time.Minute, time.Second, time.Second},
	} {
		t.Run(tt.ttl.String(), func(t *testing.T) {
			key := redistest.Key(t, "job")
			start := time.Now()
			_, err := redislock.Obtain(ctx, rdb, key, tt.ttl, &redislock.Options{MinReplicas: 1, ReplicaTimeout: tt.timeout})
			took := time.Since(start)
			var re *redislock.ReplicaError
			if !errors.As(err, &re) || !errors.Is(err, redislock.ErrNotReplicated) || re.Want != 1 || re.Got != 0 {
				t.Fatalf("Obtain with MinReplicas 1 and no replica, ReadTimeout %v: got %v after %v, want a *ReplicaError 0 of 1", replicaReadTimeout, err, took)
			}
			if took < tt.want {
				t.Errorf("failed after %v, before the ReplicaTimeout of %v", took, tt.want)
			}
			if mustExist(t, rdb, key) {
				t.Error("the unconfirmed lock was not released")
			}
		})
	}
}

// A replica that acknowledges only after the client's ReadTimeout has
// passed still confirms the lock, with the default ReplicaTimeout of long
// TTLs (6 s and 60 s). The replication is cut while the obtain starts, and
// restored once the master shows the obtain's WAIT blocked for over a
// second.
func TestMinReplicasLongWaitLateReplica(t *testing.T) {
	t.Parallel()
	master, replica := redistest.NewReplicated(t, redistest.Redis)
	opts := master.Options()
	opts.ReadTimeout = replicaReadTimeout
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	admin := master.Client(t)
	ctx := context.Background()
	for _, ttl := range []time.Duration{time.Minute, 10 * time.Minute} {
		t.Run(ttl.String(), func(t *testing.T) {
			key := redistest.Key(t, "job")
			restore := redistest.CutReplication(t, master, replica)
			done := make(chan obtainResult, 1)
			go func() {
				lock, err := redislock.Obtain(ctx, rdb, key, ttl, &redislock.Options{MinReplicas: 1})
				done <- obtainResult{lock, err}
			}()
			waitBlockedWait(t, admin, done)
			restore()
			r := <-done
			if r.err != nil {
				t.Fatalf("Obtain with MinReplicas 1, TTL %v, a replica acknowledging after the ReadTimeout of %v: %v", ttl, replicaReadTimeout, r.err)
			}
			if got, want := replica.Client(t).Get(ctx, key).Val(), mustGet(t, rdb, key); got != want {
				t.Errorf("replica has %q, master %q", got, want)
			}
			if err := r.lock.Release(ctx); err != nil {
				t.Errorf("Release: %v", err)
			}
		})
	}
}

// obtainResult is what an Obtain in a goroutine returned.
type obtainResult struct {
	lock *redislock.Lock
	err  error
}

// waitBlockedWait polls the master's client list until a client has been
// blocked in WAIT for more than a second (idle counts whole seconds, so 2
// means over one), far past replicaReadTimeout. It fails the test if the
// obtain ends first (with the result it sent on done) or after 20 s.
func waitBlockedWait(t *testing.T, admin *redis.Client, done <-chan obtainResult) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case r := <-done:
			t.Fatalf("the obtain ended before its WAIT had blocked for a second: lock %v, error %v", r.lock != nil, r.err)
		default:
		}
		list, err := admin.ClientList(context.Background()).Result()
		if err != nil {
			t.Fatalf("CLIENT LIST: %v", err)
		}
		for line := range strings.SplitSeq(list, "\n") {
			if !strings.Contains(line, " cmd=wait") {
				continue
			}
			for field := range strings.FieldsSeq(line) {
				if idle, ok := strings.CutPrefix(field, "idle="); ok {
					if n, _ := strconv.Atoi(idle); n >= 2 {
						return
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no client blocked in WAIT for a second after 20s:\n%s", list)
		}
		time.Sleep(20 * time.Millisecond) // polling the master's client list
	}
}
