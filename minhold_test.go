package redislock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// A release before MinHold leaves the key held by its token, with its fence
// token, to expire MinHold after the obtain: another obtain fails meanwhile,
// a waiter is served only after it, with a greater fence token.
func TestMinHoldEarlyRelease(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key, fence := redistest.Key(t, "{job}:lock"), redistest.Key(t, "{job}:fence")
		locker := redislock.New(rdb)
		const hold = 400 * time.Millisecond
		before := time.Now()
		lock, err := locker.Obtain(ctx, key, time.Minute, &redislock.Options{FenceKey: fence, MinHold: hold})
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		value := mustGet(t, rdb, key)
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if got := mustGet(t, rdb, key); got != value {
			t.Fatalf("after an early Release the key holds %q, want the lock's %q", got, value)
		}
		if ms := rdb.PTTL(ctx, key).Val(); ms <= 0 || ms > hold {
			t.Fatalf("after an early Release the key's TTL is %v, want (0, %v]", ms, hold)
		}
		if _, err := locker.Obtain(ctx, key, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("Obtain during the hold = %v, want ErrNotObtained", err)
		}
		wctx, cancel := context.WithTimeout(ctx, waitTimeout)
		defer cancel()
		next, err := locker.Obtain(wctx, key, time.Minute, &redislock.Options{FenceKey: fence, RetryStrategy: redislock.WaitForRelease(nil)})
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
		defer next.Release(ctx)
		if got := time.Since(before); got < hold {
			t.Errorf("the waiter obtained %v after the first obtain began, before its MinHold of %v", got, hold)
		}
		if next.FenceToken() <= lock.FenceToken() {
			t.Errorf("the waiter's fence token %d is not above the holder's %d", next.FenceToken(), lock.FenceToken())
		}
	})
}

// A release after MinHold deletes at once, as without it.
func TestMinHoldLateRelease(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := redistest.Key(t, "lock")
		lock, err := redislock.New(rdb).Obtain(ctx, key, time.Minute, &redislock.Options{MinHold: time.Millisecond})
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		time.Sleep(2 * time.Millisecond) // MinHold has passed
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if mustExist(t, rdb, key) {
			t.Fatal("a release after MinHold left the key")
		}
	})
}

// A permit released before MinHold keeps its slot until then.
func TestMinHoldPermit(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		sem := redislock.New(rdb).Semaphore(redistest.Key(t, "sem"), 1)
		const hold = 5 * time.Second
		p, err := sem.Acquire(ctx, time.Minute, &redislock.Options{MinHold: hold})
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if err := p.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		holders, err := sem.Holders(ctx)
		if err != nil {
			t.Fatalf("Holders: %v", err)
		}
		if len(holders) != 1 || holders[0].Token != p.Token() || holders[0].TTL > hold {
			t.Fatalf("holders after an early Release: %+v, want the permit, for at most %v", holders, hold)
		}
		if _, err := sem.Acquire(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("Acquire during the hold = %v, want ErrNotObtained", err)
		}
	})
}

// A negative MinHold, and one where it is not supported, fail before
// anything is sent.
func TestMinHoldInvalid(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	c := redislock.New(rdb)
	neg := &redislock.Options{MinHold: -time.Second}
	some := &redislock.Options{MinHold: time.Second}
	key := redistest.Key(t, "lock")
	for name, err := range map[string]error{
		"Obtain":     func() error { _, err := c.Obtain(ctx, key, time.Minute, neg); return err }(),
		"Acquire":    func() error { _, err := c.Semaphore(key, 2).Acquire(ctx, time.Minute, neg); return err }(),
		"RLock":      func() error { _, err := c.RWMutex(key).RLock(ctx, time.Minute, some); return err }(),
		"Lock":       func() error { _, err := c.RWMutex(key).Lock(ctx, time.Minute, some); return err }(),
		"ObtainSlot": func() error { _, err := c.ObtainSlot(ctx, key, 0, nil); return err }(),
		"ObtainSlot MinHold": func() error {
			_, err := c.ObtainSlot(ctx, key, time.Hour, neg)
			return err
		}(),
	} {
		if !errors.Is(err, redislock.ErrInvalidOption) {
			t.Errorf("%s = %v, want ErrInvalidOption", name, err)
		}
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Errorf("%d keys written", n)
	}
}

// ObtainSlot takes one key per slot and keeps it to the slot's end: a
// second replica firing later in the same slot finds it taken, even after
// the first released it.
func TestObtainSlot(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		job := redistest.Key(t, "{report}")
		a, b := redislock.New(rdb), redislock.New(rdb)
		lock, err := a.ObtainSlot(ctx, job, time.Hour, nil)
		if err != nil {
			t.Fatalf("ObtainSlot: %v", err)
		}
		key, end := redislock.SlotKey(job, time.Hour, time.Now())
		if lock.Key() != key {
			t.Fatalf("slot key %q, want %q", lock.Key(), key)
		}
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if ms := rdb.PTTL(ctx, key).Val(); ms <= 0 || time.Now().Add(ms).Before(end.Add(-time.Second)) {
			t.Fatalf("after Release the slot's key has a TTL of %v, want it to last to the slot's end %v", ms, end)
		}
		if _, err := b.ObtainSlot(ctx, job, time.Hour, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("a second ObtainSlot in the slot = %v, want ErrNotObtained", err)
		}
	})
}

func TestSlotKey(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		period   time.Duration
		t        string
		key, end string
	}{
		{time.Minute, "2026-12-04T10:00:00Z", "job:2026-12-04T10:00:00.000Z", "2026-12-04T10:01:00Z"},
		{time.Minute, "2026-12-04T10:00:59.999Z", "job:2026-12-04T10:00:00.000Z", "2026-12-04T10:01:00Z"},
		{time.Minute, "2026-12-04T10:01:00Z", "job:2026-12-04T10:01:00.000Z", "2026-12-04T10:02:00Z"},
		{24 * time.Hour, "2026-12-04T23:59:59+01:00", "job:2026-12-04T00:00:00.000Z", "2026-12-05T00:00:00Z"},
		{500 * time.Millisecond, "2026-12-04T10:00:00.7Z", "job:2026-12-04T10:00:00.500Z", "2026-12-04T10:00:01Z"},
		{0, "2026-12-04T10:00:00.7001Z", "job:2026-12-04T10:00:00.700Z", "2026-12-04T10:00:00.701Z"},
	} {
		key, end := redislock.SlotKey("job", c.period, at(c.t))
		if key != c.key || !end.Equal(at(c.end)) {
			t.Errorf("SlotKey(%v, %s) = %q, %v; want %q, %s", c.period, c.t, key, end, c.key, c.end)
		}
		if !strings.HasPrefix(key, "job:") {
			t.Errorf("key %q does not start with the job", key)
		}
	}
}

// A second ObtainSlot that waits (a retry strategy) ends at the slot's end:
// it never takes the key of a slot whose job ran, which would run that
// slot's job twice. (The key is freed at the slot's end; the wait, bounded
// by one TTL of a period from its start, went on past it.)
func TestObtainSlotWaitEndsWithSlot(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		job := redistest.Key(t, "{report}")
		const period = 300 * time.Millisecond
		first, err := redislock.New(rdb).ObtainSlot(ctx, job, period, nil)
		if err != nil {
			t.Fatalf("ObtainSlot: %v", err)
		}
		if err := first.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		wctx, cancel := context.WithTimeout(ctx, waitTimeout)
		defer cancel()
		second, err := redislock.New(rdb).ObtainSlot(wctx, job, period, &redislock.Options{RetryStrategy: redislock.LinearBackoff(10 * time.Millisecond)})
		if err == nil {
			defer second.Release(ctx)
			if second.Key() == first.Key() {
				t.Fatalf("a waiting ObtainSlot took the key %s of a slot whose job had run", second.Key())
			}
			return // the first obtain was at the very end of its slot: the second is in the next
		}
		if !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("waiting ObtainSlot = %v, want ErrNotObtained", err)
		}
	})
}

// A lock released before MinHold is released: a second Release reports
// ErrLockNotHeld and a Refresh ErrNotObtained, as after any release, and
// neither keeps the keys beyond the hold.
func TestMinHoldReleasedOnce(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := redistest.Key(t, "lock")
		const hold = 5 * time.Second
		lock, err := redislock.New(rdb).Obtain(ctx, key, time.Minute, &redislock.Options{MinHold: hold})
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if err := lock.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Errorf("second Release = %v, want ErrLockNotHeld", err)
		}
		if err := lock.Refresh(ctx, time.Hour, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("Refresh after Release = %v, want ErrNotObtained", err)
		}
		if ms := rdb.PTTL(ctx, key).Val(); ms <= 0 || ms > hold {
			t.Errorf("the key's TTL is %v, want (0, %v]", ms, hold)
		}
	})
}
