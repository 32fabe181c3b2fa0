package redislock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// blockingLost is a hook whose Lost blocks until released.
type blockingLost struct {
	redislock.NopHook
	entered chan struct{}
	release chan struct{}
}

func (h *blockingLost) Lost(redislock.LostEvent) {
	close(h.entered)
	<-h.release
}

// Issue 32, item 5: a Lost hook that blocks cannot delay the loss signal:
// the keep-alive's contexts are cancelled and its Done closed first.
func TestHookLostCannotDelayTheSignal(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	h := &blockingLost{entered: make(chan struct{}), release: make(chan struct{})}
	defer close(h.release)
	c := redislock.New(rdb)
	c.AddHook(h)
	key := redistest.Key(t, "lock")
	lock, err := c.Obtain(ctx, key, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	ka, err := lock.KeepAlive(600*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	work, cancel := ka.Context(ctx)
	defer cancel()
	if err := rdb.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	recv(t, h.entered, "the Lost hook to be called")
	// The hook is blocked now: the signals must already have fired.
	select {
	case <-ka.Done():
	default:
		t.Fatal("Done is not closed while the Lost hook runs")
	}
	if !errors.Is(context.Cause(work), redislock.ErrLockLost) {
		t.Fatalf("the keep-alive's context: cause %v, want ErrLockLost while the Lost hook runs", context.Cause(work))
	}
}

// panicking is a hook whose methods panic, counting the calls.
type panicking struct {
	redislock.NopHook
	calls atomic.Int32
}

func (p *panicking) ObtainDone(context.Context, redislock.ObtainEvent) {
	p.calls.Add(1)
	panic("ObtainDone")
}

func (p *panicking) RefreshStart(context.Context, redislock.RefreshEvent) context.Context {
	p.calls.Add(1)
	panic("RefreshStart")
}

func (p *panicking) Lost(redislock.LostEvent) {
	p.calls.Add(1)
	panic("Lost")
}

// Issue 32, item 5: a hook's panic is recovered and dropped: an obtain
// whose ObtainDone panics returns its lock (never left held with no
// owner), and a keep-alive whose hooks panic refreshes and signals its
// loss without ending the process.
func TestHookPanics(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	p := &panicking{}
	c := redislock.New(rdb)
	c.AddHook(p)
	key := redistest.Key(t, "lock")
	var lock *redislock.Lock
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("Obtain panicked: %v", r)
			}
		}()
		var err error
		if lock, err = c.Obtain(ctx, key, time.Minute, nil); err != nil {
			t.Fatal(err)
		}
	}()
	ka, err := lock.KeepAlive(300*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Refreshes (every 100 ms) whose hooks panic go on: the keep-alive
	// outlives several of its TTLs, each refresh's panic recovered.
	deadline := time.Now().Add(waitTimeout)
	for p.calls.Load() < 8 {
		if time.Now().After(deadline) {
			t.Fatalf("%d hook calls within %v, want 8", p.calls.Load(), waitTimeout)
		}
		select {
		case <-ka.Done():
			t.Fatalf("the keep-alive ended: %v", ka.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 {
		t.Fatalf("the key's TTL is %v after the refreshes", ttl)
	}
	if err := rdb.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	recv(t, ka.Done(), "the keep-alive to signal the loss")
	if !errors.Is(ka.Err(), redislock.ErrLockLost) {
		t.Fatalf("Err = %v, want ErrLockLost", ka.Err())
	}
}
