package redislock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/redistest"
	"go.uber.org/goleak"
)

func TestWaitKeys(t *testing.T) {
	cases := []struct {
		keys []string
		want []string // the companions: queues, then wake-up lists; nil: none possible
	}{
		{[]string{"{job}:lock"}, []string{"{job}:lock:redislock:waiters", "{job}:lock:redislock:wake"}},
		{[]string{"report:daily"}, []string{"{report:daily}:redislock:waiters", "{report:daily}:redislock:wake"}},
		{[]string{"a{b"}, []string{"{a{b}:redislock:waiters", "{a{b}:redislock:wake"}},
		{[]string{"x{y}z"}, []string{"x{y}z:redislock:waiters", "x{y}z:redislock:wake"}},
		{[]string{"{j}:a", "{j}:b"}, []string{"{j}:a:redislock:waiters", "{j}:b:redislock:waiters", "{j}:a:redislock:wake", "{j}:b:redislock:wake"}},
		// Hashed whole, with a "}" that would end a tag around them: no
		// companion can share their slot by construction.
		{[]string{"{}x"}, nil},
		{[]string{"x}y"}, nil},
		{[]string{"{j}:a", "b}"}, nil},
	}
	for _, tc := range cases {
		got, ok := waitKeys(tc.keys)
		if !ok {
			if tc.want != nil {
				t.Errorf("waitKeys(%q): none, want %q", tc.keys, tc.want)
			}
			continue
		}
		if tc.want == nil {
			t.Errorf("waitKeys(%q) = %q, want none", tc.keys, got)
			continue
		}
		n := len(tc.keys)
		if strings.Join(got[:n], ",") != strings.Join(tc.keys, ",") || strings.Join(got[n:], ",") != strings.Join(tc.want, ",") {
			t.Errorf("waitKeys(%q) = %q, want the keys then %q", tc.keys, got, tc.want)
		}
		for i, k := range got[n:] {
			if lock := tc.keys[i%n]; HashSlot(k) != HashSlot(lock) {
				t.Errorf("%q is in slot %d, its lock key %q in %d", k, HashSlot(k), lock, HashSlot(lock))
			}
		}
	}
}

// scripterOnly is a comparable RedisClient with no limits known.
type scripterOnly struct{ redis.Scripter }

func TestWaitGroupLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		client := &scripterOnly{}
		far := time.Now().Add(time.Minute)
		members := make([]*waiter, 3)
		var g *waitGroup
		for i := range members {
			members[i] = newWaiter()
			members[i].longest = maxBlock
			members[i].since = time.Now()
			if j := joinWaitGroup(client, "wake", members[i]); g == nil {
				g = j
			} else if j != g {
				t.Fatal("two groups for one client and list")
			}
		}
		// The first member to wait leads and may block: as long as it has
		// waited, at least firstBlock.
		if block, err := g.wait(ctx, members[0], far); err != nil || block != firstBlock {
			t.Fatalf("first member: block %v, %v; want %v", block, err, firstBlock)
		}
		g.unblock()
		// The others sleep until the lead passes to them, oldest first.
		blocks := make(chan int, 2)
		for i := 1; i < 3; i++ {
			go func() {
				if block, err := g.wait(ctx, members[i], far); err == nil && block > 0 {
					g.unblock()
					blocks <- i
				}
			}()
		}
		synctest.Wait()
		if len(blocks) != 0 {
			t.Fatalf("member %d leads while the first one does", <-blocks)
		}
		time.Sleep(time.Second) // in the bubble: the members have waited a second
		g.leave(members[0])
		if i := <-blocks; i != 1 {
			t.Fatalf("lead passed to member %d, want the oldest, 1", i)
		}
		g.leave(members[1])
		if i := <-blocks; i != 2 {
			t.Fatalf("lead passed to member %d, want 2", i)
		}
		// A member too close to its deadline does not lead: it is told to
		// attempt when the time comes.
		near := time.Now().Add(blockSlack + minBlock/2)
		if block, err := g.wait(ctx, members[2], near); err != nil || block != 0 || time.Now().Before(near) {
			t.Fatalf("member near its deadline: block %v, %v at %v before it", block, err, near.Sub(time.Now()))
		}
		g.leave(members[2])
		waitGroups.mu.Lock()
		left := len(waitGroups.groups) + len(waitGroups.slots)
		waitGroups.mu.Unlock()
		if left != 0 {
			t.Errorf("%d groups or slot counts left after every member left", left)
		}
	})
}

func TestWaitGroupBlockSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		client := &scripterOnly{}
		far := time.Now().Add(time.Minute)
		// Five groups of one client, whose pool size is unknown: four may
		// block at once; the fifth leader polls at firstBlock.
		var ws []*waiter
		var gs []*waitGroup
		for i := range 5 {
			w := newWaiter()
			w.longest, w.since = maxBlock, time.Now()
			ws = append(ws, w)
			gs = append(gs, joinWaitGroup(client, "wake"+string(rune('a'+i)), w))
		}
		for i := range 4 {
			if block, _ := gs[i].wait(ctx, ws[i], far); block <= 0 {
				t.Fatalf("group %d may not block", i)
			}
		}
		start := time.Now()
		if block, _ := gs[4].wait(ctx, ws[4], far); block != 0 || time.Since(start) != firstBlock {
			t.Errorf("fifth group: block %v after %v, want 0 after %v", block, time.Since(start), firstBlock)
		}
		gs[0].unblock()
		if block, _ := gs[4].wait(ctx, ws[4], far); block <= 0 {
			t.Errorf("fifth group may not block once a slot is free")
		}
		for i := range 5 {
			if i > 0 {
				gs[i].unblock()
			}
			gs[i].leave(ws[i])
		}
	})
}

// The waiting goroutines that leave, obtain or give up leave no goroutine,
// connection, group or key behind. Not parallel: goleak compares with the
// goroutines of the tests that are paused meanwhile.
func TestWaitLeavesNothingBehind(t *testing.T) {
	srv := redistest.SharedServer(t, redistest.Redis)
	ctx := context.Background()
	admin := srv.Client(t)
	admin.Ping(ctx)
	ignore := goleak.IgnoreCurrent()

	key := redistest.Key(t, "lock")
	opt := &Options{RetryStrategy: WaitForRelease(nil)}
	holder, err := New(admin).Obtain(ctx, key, time.Minute, opt)
	if err != nil {
		t.Fatal(err)
	}
	shared := redis.NewClient(srv.Options())
	clients := []*redis.Client{shared}
	var wg sync.WaitGroup
	cancelCtx, cancel := context.WithCancel(ctx)
	errs := make(chan error, 8)
	for i := range 8 {
		rdb := shared
		if i%2 == 0 {
			rdb = redis.NewClient(srv.Options())
			clients = append(clients, rdb)
		}
		wctx := ctx
		if i >= 6 {
			wctx = cancelCtx // these two give up
		}
		wg.Go(func() {
			lock, err := New(rdb).Obtain(wctx, key, time.Minute, opt)
			if err == nil {
				err = lock.Release(ctx)
			}
			errs <- err
		})
		for admin.ZCard(ctx, key+waitQueueSuffix).Val() != int64(i+1) {
			// Until the waiter is registered.
		}
	}
	cancel()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	var obtained, gaveUp int
	for err := range errs {
		switch {
		case err == nil:
			obtained++
		case errors.Is(err, context.Canceled):
			gaveUp++
		default:
			t.Errorf("waiter: %v", err)
		}
	}
	if obtained != 6 || gaveUp != 2 {
		t.Errorf("%d waiters obtained the lock and %d gave up, want 6 and 2", obtained, gaveUp)
	}

	for _, c := range clients {
		if s := c.PoolStats(); s.TotalConns != s.IdleConns {
			t.Errorf("%d connections of a client still in use", s.TotalConns-s.IdleConns)
		}
	}
	if keys := admin.Keys(ctx, redistest.Tag(t)+"*").Val(); len(keys) != 0 {
		t.Errorf("keys left behind: %q", keys)
	}
	waitGroups.mu.Lock()
	left := len(waitGroups.groups) + len(waitGroups.slots)
	waitGroups.mu.Unlock()
	if left != 0 {
		t.Errorf("%d groups or slot counts left", left)
	}
	for _, c := range clients {
		_ = c.Close()
	}
	goleak.VerifyNone(t, ignore)
}

func TestWaitForReleaseStrategy(t *testing.T) {
	ms := time.Millisecond
	w := WaitForRelease(LimitRetry(LinearBackoff(ms), 2))
	// Where a call retries without events (Refresh, transient errors), it
	// follows the fallback, afresh each call.
	for range 2 {
		s := startRetry(w)
		for i, want := range []time.Duration{ms, ms, 0} {
			if got := s.NextBackoff(); got != want {
				t.Fatalf("backoff %d = %v, want %v", i+1, got, want)
			}
		}
	}
	if got := w.NextBackoff(); got != ms {
		t.Errorf("NextBackoff = %v, want the fallback's %v", got, ms)
	}
	// The default fallback: ExponentialBackoff(8ms, 128ms) with ±50% jitter.
	s := startRetry(WaitForRelease(nil))
	for i, base := range []time.Duration{8 * ms, 8 * ms, 16 * ms, 32 * ms, 64 * ms, 128 * ms, 128 * ms} {
		if got := s.NextBackoff(); got < base/2 || got > base*3/2 {
			t.Fatalf("default backoff %d = %v, want %v ± 50%%", i+1, got, base)
		}
	}
}
