package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// A second process (here: a second client) releases a lock given its key
// and token, and only with the right token.
func TestAttachReleaseByToken(t *testing.T) {
	for _, tp := range redistest.Topologies() {
		t.Run(tp.Name, func(t *testing.T) {
			t.Parallel()
			testAttachReleaseByToken(t, tp.NewClient(t), tp.NewClient(t))
		})
	}
}

func testAttachReleaseByToken(t *testing.T, rdb, rdb2 redis.UniversalClient) {
	ctx := context.Background()
	key := redistest.Key(t, "job")
	lock, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{
		Metadata: "worker-1",
		FenceKey: redistest.Key(t, "fence"),
	})
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}

	second := redislock.New(rdb2)
	wrong, err := second.Attach([]string{key}, lock.Token()+"x", lock.FenceToken())
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	if err := wrong.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("Release with a wrong token: got %v, want ErrLockNotHeld", err)
	}
	if err := wrong.Refresh(ctx, time.Hour, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("Refresh with a wrong token: got %v, want ErrNotObtained", err)
	}
	if ttl, err := wrong.TTL(ctx); ttl != 0 || err != nil {
		t.Errorf("TTL with a wrong token = %v, %v; want 0, nil", ttl, err)
	}
	prefix, err := second.Attach([]string{key}, lock.Token()[:5], 0)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	if err := prefix.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("Release with a prefix of the token: got %v, want ErrLockNotHeld", err)
	}
	if !mustExist(t, rdb, key) {
		t.Fatal("key gone after releases with wrong tokens")
	}

	right, err := second.Attach([]string{key}, lock.Token(), lock.FenceToken())
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	if right.Key() != key || right.Token() != lock.Token() || right.FenceToken() != lock.FenceToken() || right.Metadata() != "" {
		t.Errorf("attached Key, Token, FenceToken, Metadata = %q, %q, %d, %q; want %q, %q, %d, \"\"",
			right.Key(), right.Token(), right.FenceToken(), right.Metadata(), key, lock.Token(), lock.FenceToken())
	}
	if ttl, err := right.TTL(ctx); err != nil || ttl <= 50*time.Second {
		t.Errorf("attached TTL = %v, %v; want about 1m", ttl, err)
	}
	if err := right.Release(ctx); err != nil {
		t.Errorf("Release with the right token: %v", err)
	}
	if mustExist(t, rdb, key) {
		t.Error("key left after Release with the right token")
	}
	if err := lock.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("original's Release after the attached one's: got %v, want ErrLockNotHeld", err)
	}
}

// Another process takes over the keep-alive of a lock: Attach, Refresh
// (which makes the lease known), KeepAlive.
func TestAttachRefreshAndKeepAlive(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		a, b := redistest.Key(t, "a"), redistest.Key(t, "b")
		lock, err := redislock.ObtainMulti(ctx, rdb, []string{a, b}, time.Second, nil)
		if err != nil {
			t.Fatalf("ObtainMulti: %v", err)
		}
		keys := lock.Keys()
		attached, err := redislock.New(rdb).Attach(keys, lock.Token(), 0)
		if err != nil {
			t.Fatalf("Attach: %v", err)
		}
		keys[0] = "changed"
		if got := attached.Keys(); got[0] != a || got[1] != b {
			t.Errorf("attached Keys = %q, want [%q %q]: Attach must copy", got, a, b)
		}
		if _, err := attached.KeepAlive(time.Second, nil); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Errorf("KeepAlive before any Refresh: got %v, want ErrLockNotHeld (lease unknown)", err)
		}
		if err := attached.Refresh(ctx, time.Minute, nil); err != nil {
			t.Fatalf("attached Refresh: %v", err)
		}
		for _, k := range []string{a, b} {
			if ttl := rdb.PTTL(ctx, k).Val(); ttl <= 50*time.Second {
				t.Errorf("PTTL %s after the attached Refresh(1m) = %v", k, ttl)
			}
		}
		ka, err := attached.KeepAlive(time.Minute, nil)
		if err != nil {
			t.Fatalf("KeepAlive after Refresh: %v", err)
		}
		if v := time.Until(ka.ValidUntil()); v <= 50*time.Second {
			t.Errorf("ValidUntil is %v from now, want about 1m", v)
		}
		if err := attached.Release(ctx); err != nil {
			t.Errorf("attached Release: %v", err)
		}
		if !errors.Is(ka.Err(), redislock.ErrKeepAliveStopped) {
			t.Errorf("keep-alive Err after Release = %v, want ErrKeepAliveStopped", ka.Err())
		}
	})
}

func TestAttachRejectsBadInput(t *testing.T) {
	local := redislock.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))
	cluster := redislock.New(redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}))
	tests := []struct {
		name   string
		client *redislock.Client
		keys   []string
		token  string
		want   error
	}{
		{"no keys", local, nil, "t", redislock.ErrInvalidKey},
		{"empty key", local, []string{"a", ""}, "t", redislock.ErrInvalidKey},
		{"repeated key", local, []string{"a", "a"}, "t", redislock.ErrInvalidKey},
		{"empty token", local, []string{"a"}, "", redislock.ErrInvalidToken},
		{"cross slot", cluster, []string{"a", "b"}, "t", redislock.ErrCrossSlot},
		{"nil client", nil, []string{"a"}, "t", redislock.ErrNilClient},
		{"client of nil", redislock.New(nil), []string{"a"}, "t", redislock.ErrNilClient},
	}
	for _, tt := range tests {
		if l, err := tt.client.Attach(tt.keys, tt.token, 0); !errors.Is(err, tt.want) || l != nil {
			t.Errorf("%s: got %v, %v; want nil, %v", tt.name, l, err, tt.want)
		}
	}
	if _, err := cluster.Attach([]string{"{job}:a", "{job}:b"}, "t", 0); err != nil {
		t.Errorf("Attach of keys with one hash tag on a cluster: %v", err)
	}
}

// Issue 11 item 8: a lock released through Attach (what "redislock
// release" does) hands the lock over to a waiter, as its holder's Release
// would.
func TestAttachReleaseHandsOver(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		key := redistest.Key(t, "lock")
		holder, err := redislock.Obtain(ctx, env.admin, key, time.Minute, waitOpt())
		if err != nil {
			t.Fatal(err)
		}
		name := clientName("waiter")
		rdb := env.newClient(name)
		counter := &waitCounter{}
		rdb.AddHook(counter)
		done := obtainAsync(ctx, rdb, key, time.Minute, waitOpt())
		waitUntil(t, "the waiter to block", func() bool { return blocked(t, env.admin, name) })

		attached, err := redislock.New(env.newClient(clientName("cleanup"))).Attach(holder.Keys(), holder.Token(), holder.FenceToken())
		if err != nil {
			t.Fatal(err)
		}
		if err := attached.Release(ctx); err != nil {
			t.Fatalf("Release through Attach: %v", err)
		}
		got := <-done
		if got.err != nil {
			t.Fatal(got.err)
		}
		if _, _, _, grants := counter.counts(); grants != 1 {
			t.Errorf("the waiter obtained the lock with %d grants, want 1: the attached Release woke nobody", grants)
		}
		_ = got.lock.Release(ctx)
	})
}

// A user with the ACL of plain locks only (no wait queue) still releases
// an attached lock: it is deleted.
func TestAttachReleaseWithoutQueueACL(t *testing.T) {
	t.Parallel()
	for _, f := range []redistest.Flavor{redistest.Redis, redistest.Valkey} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv := redistest.NewServer(t, f)
			admin := srv.Client(t)
			ctx := context.Background()
			setUser(t, admin, "locker", lockACL)
			o := srv.Options()
			o.Username, o.Password = "locker", "locker"
			rdb := redis.NewClient(o)
			defer func() { _ = rdb.Close() }()
			for _, key := range []string{"locks:{job}:lock", "locks:plain"} {
				lock, err := redislock.Obtain(ctx, rdb, key, time.Minute, nil)
				if err != nil {
					t.Fatal(err)
				}
				attached, err := redislock.New(rdb).Attach([]string{key}, lock.Token(), 0)
				if err != nil {
					t.Fatal(err)
				}
				if err := attached.Release(ctx); err != nil {
					t.Errorf("%s: Release through Attach without the queue's ACL: %v", key, err)
				}
				if n := admin.Exists(ctx, key).Val(); n != 0 {
					t.Errorf("%s: still held after the attached Release", key)
				}
			}
		})
	}
}
