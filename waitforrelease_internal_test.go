package redislock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/redistest"
	"go.uber.org/goleak"
)

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
	companions, _ := handoff.Companions([]string{key})
	queue := companions[1]
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
		for admin.ZCard(ctx, queue).Val() != int64(i+1) {
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
	if keys := admin.Keys(ctx, "*"+redistest.Tag(t)+"*").Val(); len(keys) != 0 {
		t.Errorf("keys left behind: %q", keys)
	}
	if waits, groups, clients := handoff.Default.Waits(); waits+groups+clients != 0 {
		t.Errorf("%d waits, %d groups, %d clients left in the registry", waits, groups, clients)
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
