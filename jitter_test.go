package redislock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// A jittered strategy shared by concurrent calls: each call counts its own
// retries (run with -race).
func TestJitterPerCall(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	key := redistest.Key(t, "lock")
	held, err := redislock.Obtain(ctx, rdb, key, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	shared := redislock.Jitter(redislock.LimitRetry(redislock.LinearBackoff(time.Millisecond), 2), 0.5)
	opt := &redislock.Options{RetryStrategy: shared}
	client := newFaultyClient(rdb)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 3 {
				if _, err := redislock.Obtain(ctx, client, key, time.Minute, opt); !errors.Is(err, redislock.ErrNotObtained) {
					t.Errorf("got %v, want ErrNotObtained", err)
				}
			}
		})
	}
	wg.Wait()
	if got := client.calls(); got != 4*3*3 {
		t.Errorf("%d attempts, want 36: 3 per call (LimitRetry 2), each call starting afresh", got)
	}
}
