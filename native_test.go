package redislock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// commandLog is a go-redis hook that records the names of the commands a
// client sends.
type commandLog struct {
	mu    sync.Mutex
	names []string
}

func (c *commandLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		c.names = append(c.names, cmd.Name())
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (c *commandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		for _, cmd := range cmds {
			c.names = append(c.names, cmd.Name())
		}
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

// take returns the names recorded since the last call, but for EVAL: a
// script not yet cached on a server (or on one node of a Cluster) is sent
// again with EVAL, after EVALSHA.
func (c *commandLog) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.DeleteFunc(c.names, func(name string) bool { return name == "eval" })
	c.names = nil
	return out
}

// hooked returns a new client of topology tp that records its commands.
func hooked(t *testing.T, tp redistest.Topology) (redis.UniversalClient, *commandLog) {
	t.Helper()
	rdb := redis.NewUniversalClient(tp.Options(t))
	t.Cleanup(func() { _ = rdb.Close() })
	log := &commandLog{}
	rdb.AddHook(log)
	return rdb, log
}

// nativeServer reports whether the servers of tp have SET … IFEQ and
// DELIFEQ (Valkey 9; Redis 8.4 would, but is not in the harness).
func nativeServer(t *testing.T, tp redistest.Topology) bool {
	v := tp.Version(t)
	return v.Server == "valkey" && v.AtLeast(9, 0) || v.Server == "redis" && v.AtLeast(8, 4)
}

// Where the server has them, a single-key lock of a Client from New is
// refreshed with SET … IFEQ and released with DELIFEQ, after one HELLO;
// elsewhere, and for multi-key locks, scripts run.
func TestNativeCommandsUsed(t *testing.T) {
	for _, tp := range redistest.Topologies() {
		t.Run(tp.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rdb, log := hooked(t, tp)
			locker := redislock.New(rdb)
			native := nativeServer(t, tp)
			lock, err := locker.Obtain(ctx, redistest.Key(t, "lock"), time.Minute, &redislock.Options{FenceKey: redistest.Key(t, "fence"), Metadata: "m"})
			if err != nil {
				t.Fatalf("Obtain: %v", err)
			}
			log.take()
			if err := lock.Refresh(ctx, time.Minute, nil); err != nil {
				t.Fatalf("Refresh: %v", err)
			}
			want := []string{"hello", "set"}
			if !native {
				want = []string{"hello", "evalsha"}
			}
			if got := log.take(); !slices.Equal(got, want) {
				t.Errorf("Refresh sent %v, want %v", got, want)
			}
			if err := lock.Refresh(ctx, time.Minute, nil); err != nil {
				t.Fatalf("second Refresh: %v", err)
			}
			if err := lock.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			want = []string{"set", "delifeq"}
			if !native {
				want = []string{"evalsha", "evalsha"}
			}
			if got := log.take(); !slices.Equal(got, want) {
				t.Errorf("second Refresh and Release sent %v, want %v (HELLO once per Client)", got, want)
			}
			if n := rdb.Exists(ctx, lock.Key()).Val(); n != 0 {
				t.Errorf("key left after Release")
			}
			log.take()

			// Several keys: scripts.
			multi, err := locker.ObtainMulti(ctx, []string{redistest.Key(t, "a"), redistest.Key(t, "b")}, time.Minute, nil)
			if err != nil {
				t.Fatalf("ObtainMulti: %v", err)
			}
			if err := multi.Refresh(ctx, time.Minute, nil); err != nil {
				t.Fatalf("Refresh: %v", err)
			}
			if err := multi.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if got, want := log.take(), []string{"evalsha", "evalsha", "evalsha"}; !slices.Equal(got, want) {
				t.Errorf("multi-key lock sent %v, want %v", got, want)
			}

			// The package-level shortcut's lock asks nothing and runs scripts.
			short, err := redislock.Obtain(ctx, rdb, redistest.Key(t, "short"), time.Minute, nil)
			if err != nil {
				t.Fatalf("Obtain: %v", err)
			}
			if err := short.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if got, want := log.take(), []string{"evalsha", "evalsha"}; !slices.Equal(got, want) {
				t.Errorf("shortcut's lock sent %v, want %v", got, want)
			}
		})
	}
}

// A lock obtained with WaitForRelease hands over on release: its release
// stays a script even where the server has DELIFEQ; its refresh is native.
func TestNativeWaitedLockReleasesWithScript(t *testing.T) {
	for _, tp := range redistest.Topologies() {
		t.Run(tp.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rdb, log := hooked(t, tp)
			locker := redislock.New(rdb)
			key := redistest.Key(t, "lock")
			opt := &redislock.Options{RetryStrategy: redislock.WaitForRelease(nil)}
			lock, err := locker.Obtain(ctx, key, time.Minute, opt)
			if err != nil {
				t.Fatalf("Obtain: %v", err)
			}
			log.take()
			if err := lock.Refresh(ctx, time.Minute, nil); err != nil {
				t.Fatalf("Refresh: %v", err)
			}
			if err := lock.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			want := []string{"hello", "set", "evalsha"}
			if !nativeServer(t, tp) {
				want = []string{"hello", "evalsha", "evalsha"}
			}
			if got := log.take(); !slices.Equal(got, want) {
				t.Errorf("Refresh and Release sent %v, want %v", got, want)
			}
		})
	}
}

// The native paths keep the scripts' answers: a lock whose value changed
// under it (a re-entrant obtain with new metadata) is still ours; a lock
// gone or taken is not; an attached lock, which knows neither its metadata
// nor its fence tag, works too.
func TestNativeOwnership(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		locker := redislock.New(rdb)
		key, fence := redistest.Key(t, "lock"), redistest.Key(t, "fence")

		first, err := locker.Obtain(ctx, key, time.Minute, &redislock.Options{Token: "mine", Metadata: "one", FenceKey: fence})
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		if _, err := locker.Obtain(ctx, key, time.Minute, &redislock.Options{Token: "mine", Metadata: "two", FenceKey: fence}); err != nil {
			t.Fatalf("re-entrant Obtain: %v", err)
		}
		if err := first.Refresh(ctx, 2*time.Minute, nil); err != nil {
			t.Errorf("Refresh after a re-entrant obtain changed the metadata: %v", err)
		}
		if d := rdb.PTTL(ctx, key).Val(); d <= time.Minute {
			t.Errorf("PTTL after Refresh to 2 min = %v", d)
		}
		if err := first.Release(ctx); err != nil {
			t.Errorf("Release after a re-entrant obtain changed the metadata: %v", err)
		}
		if n := rdb.Exists(ctx, key).Val(); n != 0 {
			t.Errorf("key left after Release")
		}

		// Gone.
		lock, err := locker.Obtain(ctx, key, time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		expireNow(t, rdb, key)
		if err := lock.Refresh(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("Refresh of an expired lock: %v, want ErrNotObtained", err)
		}
		if err := lock.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Errorf("Release of an expired lock: %v, want ErrLockNotHeld", err)
		}

		// Taken: left to its holder.
		lock, err = locker.Obtain(ctx, key, time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		expireNow(t, rdb, key)
		other, err := locker.Obtain(ctx, key, time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain by another: %v", err)
		}
		if err := lock.Refresh(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("Refresh of a taken lock: %v, want ErrNotObtained", err)
		}
		if err := lock.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Errorf("Release of a taken lock: %v, want ErrLockNotHeld", err)
		}
		if d, err := other.TTL(ctx); err != nil || d <= 0 {
			t.Errorf("the holder's lock after the other's Release: TTL %v, %v", d, err)
		}

		// Attached, with the right token, then the wrong one.
		att, err := locker.Attach([]string{key}, other.Token(), other.FenceToken())
		if err != nil {
			t.Fatal(err)
		}
		wrong, err := locker.Attach([]string{key}, "not-"+other.Token(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := wrong.Refresh(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("Refresh with a wrong token: %v, want ErrNotObtained", err)
		}
		if err := wrong.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Errorf("Release with a wrong token: %v, want ErrLockNotHeld", err)
		}
		if err := att.Refresh(ctx, 2*time.Minute, nil); err != nil {
			t.Errorf("Refresh of the attached lock: %v", err)
		}
		if err := att.Release(ctx); err != nil {
			t.Errorf("Release of the attached lock: %v", err)
		}
		if n := rdb.Exists(ctx, key).Val(); n != 0 {
			t.Errorf("key left after the attached lock's Release")
		}

		// A keep-alive refreshes natively, and ends when the lock is lost.
		lock, err = locker.Obtain(ctx, key, 300*time.Millisecond, nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		ka, err := lock.KeepAlive(300*time.Millisecond, &redislock.KeepAliveOptions{Interval: 20 * time.Millisecond})
		if err != nil {
			t.Fatalf("KeepAlive: %v", err)
		}
		if err := rdb.Set(ctx, key, "4:else:0:", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		<-ka.Done()
		if err := ka.Err(); !errors.Is(err, redislock.ErrLockLost) || !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("keep-alive of a taken lock ended with %v, want ErrLockLost and ErrNotObtained", err)
		}
	})
}

// A server that refuses a native command (a node of an older version, an
// ACL without it) makes the Client fall back to scripts for good.
func TestNativeRefusedFallsBack(t *testing.T) {
	for _, tp := range redistest.Topologies() {
		if tp.Flavor != redistest.Valkey9 || tp.Cluster {
			continue
		}
		t.Run(tp.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			admin := tp.NewClient(t).(*redis.Client)
			user := "no-delifeq"
			setUser(t, admin, user, []string{"~*", "+@all", "-delifeq"})
			o := admin.Options()
			o.Username, o.Password = user, user
			rdb := redis.NewClient(o)
			t.Cleanup(func() { _ = rdb.Close() })
			log := &commandLog{}
			rdb.AddHook(log)
			locker := redislock.New(rdb)
			for i := range 2 {
				lock, err := locker.Obtain(ctx, redistest.Key(t, "lock"), time.Minute, nil)
				if err != nil {
					t.Fatalf("Obtain: %v", err)
				}
				log.take()
				if err := lock.Release(ctx); err != nil {
					t.Fatalf("Release %d without DELIFEQ: %v", i, err)
				}
				want := []string{"hello", "delifeq", "evalsha"}
				if i > 0 {
					want = []string{"evalsha"}
				}
				if got := log.take(); !slices.Equal(got, want) {
					t.Errorf("Release %d sent %v, want %v", i, got, want)
				}
			}
		})
	}
}

// A client that cannot send plain commands (a RedisClient that is only a
// redis.Scripter) runs scripts.
func TestNativeScripterOnly(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		f := newFaultyClient(rdb)
		locker := redislock.New(f)
		lock, err := locker.Obtain(ctx, redistest.Key(t, "lock"), time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		if err := lock.Refresh(ctx, time.Minute, nil); err != nil {
			t.Fatalf("Refresh: %v", err)
		}
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if got := f.calls(); got < 3 {
			t.Errorf("%d script calls, want 3 (and EVAL after NOSCRIPT)", got)
		}
	})
}
