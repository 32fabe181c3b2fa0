package chaos_test

import (
	"context"
	"testing"
	"time"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// issueTokens obtains and releases key n times with fence, and returns the
// highest fence token issued.
func issueTokens(t *testing.T, rdb redislock.RedisClient, key, fence string, n int) int64 {
	t.Helper()
	ctx := context.Background()
	var top int64
	for i := range n {
		lock, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{FenceKey: fence})
		if err != nil {
			t.Fatalf("Obtain %d: %v", i, err)
		}
		if lock.FenceToken() <= top {
			t.Fatalf("Obtain %d: token %d not above %d", i, lock.FenceToken(), top)
		}
		top = lock.FenceToken()
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("Release %d: %v", i, err)
		}
	}
	return top
}

// A restart without persistence loses the fence counter; the next token is
// still above every token issued before.
func TestFenceTokenAfterRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Redis)
	rdb := srv.Client(t)
	key, fence := redistest.Key(t, "lock"), redistest.Key(t, "fence")
	ctx := context.Background()
	top := issueTokens(t, rdb, key, fence, 20)

	srv.Restart(t)
	if n, err := rdb.Exists(ctx, fence).Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS fence after the restart = %d, %v; want 0 (the counter is lost)", n, err)
	}
	// A plain counter (INCR) would now start again at 1.
	lock, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{FenceKey: fence})
	if err != nil {
		t.Fatalf("Obtain after the restart: %v", err)
	}
	if lock.FenceToken() <= top {
		t.Errorf("token after the restart = %d, want above %d, the highest before", lock.FenceToken(), top)
	}
	t.Logf("highest token before the restart %d, first after %d", top, lock.FenceToken())
}

// A Sentinel failover to a replica that never received the counter: the
// next token is still above every token issued before. The replica is made
// writable and the counter deleted on it alone (a write to a replica is not
// replicated), which is what a failover before replication looks like.
func TestFenceTokenAfterSentinelFailover(t *testing.T) {
	t.Parallel()
	s := redistest.NewSentinel(t, redistest.Redis)
	rdb := s.Client(t)
	key, fence := redistest.Key(t, "lock"), redistest.Key(t, "fence")
	ctx := context.Background()
	top := issueTokens(t, rdb, key, fence, 20)

	master := s.Master(t)
	var replica *redistest.Server
	for _, srv := range s.Servers() {
		if srv != master {
			replica = srv
		}
	}
	rc := replica.Client(t)
	// Once the counter has reached the replica, drop it there.
	redistest.WaitFor(t, fence+" on the replica", 10*time.Second, func() bool {
		return rc.Exists(ctx, fence).Val() == 1
	})
	if err := rc.ConfigSet(ctx, "replica-read-only", "no").Err(); err != nil {
		t.Fatalf("CONFIG SET replica-read-only no: %v", err)
	}
	if err := rc.Del(ctx, fence).Err(); err != nil {
		t.Fatalf("DEL fence on the replica: %v", err)
	}

	addr := s.Failover(t)
	if addr != replica.Addr() {
		t.Fatalf("new master %s, want the replica %s", addr, replica.Addr())
	}
	if n, err := rc.Exists(ctx, fence).Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS fence on the new master = %d, %v; want 0 (the counter is lost)", n, err)
	}
	// The failover client follows the new master about a second after the
	// failover; until then the old master, still writable for a while (and
	// still holding the counter), may answer it. Obtain on the new master.
	lock, err := redislock.Obtain(ctx, rc, key, time.Minute, &redislock.Options{FenceKey: fence})
	if err != nil {
		t.Fatalf("Obtain on the new master: %v", err)
	}
	if lock.FenceToken() <= top {
		t.Errorf("token after the failover = %d, want above %d, the highest before", lock.FenceToken(), top)
	}
	t.Logf("highest token before the failover %d, first after %d", top, lock.FenceToken())
	_ = lock.Release(ctx)
}
