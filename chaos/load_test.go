package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/chaos"
	"github.com/redislock/redislock/internal/redistest"
	"go.uber.org/goleak"
)

// TestLoad runs 200 goroutines contending for 50 locks on one server, each
// making a fixed number of obtain attempts (50 in make test, 5,000 with
// -chaos.long: a million), then checks that nothing but ErrNotObtained
// ever came back, that no two goroutines ever held a lock at once, that
// fence tokens of each lock increased, and that no goroutine is left.
//
// It is not parallel: goleak must see this test's goroutines alone.
func TestLoad(t *testing.T) {
	const goroutines, keys = 200, 50
	ops := 50
	if *long {
		ops = 5000
	}
	srv := redistest.NewServer(t, redistest.Redis)
	ignore := goleak.IgnoreCurrent()

	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 64, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
	locker := redislock.New(rdb)
	names := lockKeys(t, keys)

	// One slot per lock: who holds it by this process's account, the last
	// fence token issued, and the fenced resource's highest token.
	type slot struct {
		mu      sync.Mutex
		holder  int
		last    int64
		highest int64
	}
	slots := make([]slot, keys)
	var (
		obtained, notObtained, errCount, overlaps, tokenOrder, refused atomic.Int64
		firstErr                                                       atomic.Value
	)
	fail := func(err error) {
		errCount.Add(1)
		firstErr.CompareAndSwap(nil, err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for g := range goroutines {
		id := g + 1
		wg.Go(func() {
			ctx := context.Background()
			rnd := rand.New(rand.NewPCG(uint64(id), uint64(start.UnixNano())))
			for range ops {
				k := rnd.IntN(keys)
				lock, err := locker.Obtain(ctx, names[k], 10*time.Second, &redislock.Options{FenceKey: fenceOf(names[k])})
				switch {
				case errors.Is(err, redislock.ErrNotObtained):
					notObtained.Add(1)
					continue
				case err != nil:
					fail(fmt.Errorf("Obtain: %w", err))
					continue
				}
				obtained.Add(1)
				tok := lock.FenceToken()
				s := &slots[k]
				s.mu.Lock()
				if s.holder != 0 {
					overlaps.Add(1)
				}
				if tok <= s.last {
					tokenOrder.Add(1)
				}
				s.holder, s.last = id, tok
				// The write to the fenced resource.
				if tok < s.highest {
					refused.Add(1)
				} else {
					s.highest = tok
				}
				s.mu.Unlock()

				// The holder stops believing before it sends the release.
				s.mu.Lock()
				if s.holder == id {
					s.holder = 0
				}
				s.mu.Unlock()
				if err := lock.Release(ctx); err != nil {
					fail(fmt.Errorf("Release: %w", err))
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := rdb.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}

	total := int64(goroutines * ops)
	t.Logf("%d goroutines × %d obtains over %d keys in %v (%.0f obtains/s): %d obtained, %d not obtained, %d errors, %d overlaps, %d token-order violations",
		goroutines, ops, keys, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(),
		obtained.Load(), notObtained.Load(), errCount.Load(), overlaps.Load(), tokenOrder.Load())
	if n := obtained.Load() + notObtained.Load() + errCount.Load(); n != total {
		t.Errorf("%d obtain attempts accounted for, want %d", n, total)
	}
	if n := errCount.Load(); n > 0 {
		t.Errorf("%d errors other than ErrNotObtained; the first: %v", n, firstErr.Load())
	}
	if overlaps.Load() > 0 || tokenOrder.Load() > 0 || refused.Load() > 0 {
		t.Errorf("%d overlaps, %d token-order violations, %d fenced writes refused; want none", overlaps.Load(), tokenOrder.Load(), refused.Load())
	}
	if obtained.Load() == 0 {
		t.Error("no lock was ever obtained")
	}
	results.add("load", chaos.Report{
		// Calls and writes: every attempt, and for each lock obtained a
		// fenced write and a release.
		Ops:        int(total + 2*obtained.Load()),
		Obtains:    int(obtained.Load()),
		Overlaps:   int(overlaps.Load()),
		TokenOrder: int(tokenOrder.Load()),
		// Every obtain is followed by one fenced write.
		StaleRefused: int(refused.Load()),
	}, errCount.Load())
	left := "none"
	if err := goleak.Find(ignore); err != nil {
		left = err.Error()
		t.Errorf("goroutines left after the load: %v", err)
	}
	results.note("load: %d goroutines × %d obtain attempts over %d keys in %v (%.0f/s, -race), %d errors other than ErrNotObtained, %d overlaps, goroutines left: %s",
		goroutines, ops, keys, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(), errCount.Load(), overlaps.Load(), left)
}
