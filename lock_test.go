package redislock_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

func TestRefresh(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := redistest.Key(t, "job")
		lock, err := redislock.Obtain(ctx, rdb, key, time.Second, nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		if err := lock.Refresh(ctx, time.Hour, nil); err != nil {
			t.Fatalf("Refresh: %v", err)
		}
		if ttl, err := lock.TTL(ctx); err != nil || ttl < time.Minute {
			t.Errorf("TTL after Refresh(1h) = %v, %v; want about 1h", ttl, err)
		}
		if err := lock.Refresh(ctx, 0, nil); !errors.Is(err, redislock.ErrInvalidTTL) {
			t.Errorf("Refresh(0): got %v, want ErrInvalidTTL", err)
		}
		if ttl := rdb.PTTL(ctx, key).Val(); ttl < time.Minute {
			t.Errorf("PTTL after a rejected Refresh(0) = %v: the key was touched", ttl)
		}

		expireNow(t, rdb, key)
		f := newFaultyClient(rdb)
		lost, err := redislock.Obtain(ctx, f, redistest.Key(t, "other"), time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		if err := lost.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		before := f.calls()
		if err := lost.Refresh(ctx, time.Minute, &redislock.Options{RetryStrategy: redislock.LinearBackoff(time.Millisecond)}); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("Refresh of a released lock: got %v, want ErrNotObtained", err)
		}
		if n := f.calls() - before; n != 1 {
			t.Errorf("Refresh of a lost lock made %d attempts, want 1 (not retried)", n)
		}
		if err := lock.Refresh(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("Refresh of an expired lock: got %v, want ErrNotObtained", err)
		}
		if mustExist(t, rdb, key) {
			t.Error("Refresh of an expired lock wrote the key")
		}
	})
}

func TestRefreshRetriesTransientErrors(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		f := newFaultyClient(rdb)
		ctx := context.Background()
		lock, err := redislock.Obtain(ctx, f, redistest.Key(t, "job"), time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		defer lock.Release(ctx)
		f.failNext(2, errTransient)
		if err := lock.Refresh(ctx, time.Minute, &redislock.Options{RetryStrategy: redislock.LinearBackoff(time.Millisecond)}); err != nil {
			t.Errorf("Refresh after 2 transient failures: %v", err)
		}
		f.failNext(1, errTransient)
		if err := lock.Refresh(ctx, time.Minute, nil); !errors.Is(err, errTransient) {
			t.Errorf("Refresh with NoRetry after a transient failure: got %v, want it", err)
		}
	})
}

func TestRefreshPartlyLostChangesNothing(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		a, b := redistest.Key(t, "a"), redistest.Key(t, "b")
		lock, err := redislock.ObtainMulti(ctx, rdb, []string{a, b}, time.Minute, nil)
		if err != nil {
			t.Fatalf("ObtainMulti: %v", err)
		}
		expireNow(t, rdb, b)
		if err := lock.Refresh(ctx, time.Hour, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("Refresh with a key lost: got %v, want ErrNotObtained", err)
		}
		if ttl := rdb.PTTL(ctx, a).Val(); ttl > time.Minute {
			t.Errorf("PTTL of the kept key = %v: a failed Refresh extended it", ttl)
		}
	})
}

func TestTTL(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := redistest.Key(t, "job")
		lock, err := redislock.Obtain(ctx, rdb, key, time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		ttl, err := lock.TTL(ctx)
		if err != nil || ttl <= 50*time.Second || ttl > time.Minute {
			t.Errorf("TTL() = %v, %v; want about 1m", ttl, err)
		}
		expireNow(t, rdb, key)
		if ttl, err := lock.TTL(ctx); ttl != 0 || err != nil {
			t.Errorf("TTL() of an expired lock = %v, %v; want 0, nil", ttl, err)
		}
		other, err := redislock.Obtain(ctx, rdb, key, time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain by another: %v", err)
		}
		defer other.Release(ctx)
		if ttl, err := lock.TTL(ctx); ttl != 0 || err != nil {
			t.Errorf("TTL() of a lock taken by another = %v, %v; want 0, nil", ttl, err)
		}
	})
}

// Defect 7: a multi-key lock that had lost a key could be neither refreshed
// nor released; its other keys stayed until they expired.
func TestReleasePartlyLost(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		a, b, c := redistest.Key(t, "a"), redistest.Key(t, "b"), redistest.Key(t, "c")
		lock, err := redislock.ObtainMulti(ctx, rdb, []string{a, b, c}, time.Minute, nil)
		if err != nil {
			t.Fatalf("ObtainMulti: %v", err)
		}
		expireNow(t, rdb, b)
		other, err := redislock.Obtain(ctx, rdb, b, time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain b by another: %v", err)
		}
		if err := lock.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Errorf("Release with a key lost: got %v, want ErrLockNotHeld", err)
		}
		for _, k := range []string{a, c} {
			if mustExist(t, rdb, k) {
				t.Errorf("key %s still held after Release", k)
			}
		}
		if err := other.Release(ctx); err != nil {
			t.Errorf("the other holder lost b to our Release: %v", err)
		}
	})
}

func TestReleaseTwice(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		lock, err := redislock.Obtain(ctx, rdb, redistest.Key(t, "job"), time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if err := lock.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Errorf("second Release: got %v, want ErrLockNotHeld", err)
		}
	})
}

func TestReleaseWithEndedContext(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		key := redistest.Key(t, "job")
		lock, err := redislock.Obtain(context.Background(), rdb, key, time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := lock.Release(ctx); err != nil {
			t.Errorf("Release with a cancelled context: %v", err)
		}
		if mustExist(t, rdb, key) {
			t.Error("key left after Release with a cancelled context")
		}
	})
}

// Defect 8: accessors panicked on a nil *Lock.
func TestNilLock(t *testing.T) {
	var l *redislock.Lock
	ctx := context.Background()
	if l.Key() != "" || l.Keys() != nil || l.Token() != "" || l.Metadata() != "" || l.FenceToken() != 0 {
		t.Error("accessors of a nil Lock return non-zero values")
	}
	if ttl, err := l.TTL(ctx); ttl != 0 || !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("TTL() = %v, %v; want 0, ErrLockNotHeld", ttl, err)
	}
	if err := l.Refresh(ctx, time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("Refresh: got %v, want ErrNotObtained", err)
	}
	if err := l.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("Release: got %v, want ErrLockNotHeld", err)
	}
}

// Defect 9: Lock embedded *Client, so lock.Obtain compiled and the handle
// exposed the client's methods.
func TestLockExposesOnlyItsOwnMethods(t *testing.T) {
	typ := reflect.TypeFor[redislock.Lock]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.IsExported() || f.Anonymous {
			t.Errorf("Lock has exported or embedded field %s", f.Name)
		}
	}
	for _, name := range []string{"Obtain", "ObtainMulti"} {
		if _, ok := reflect.TypeFor[*redislock.Lock]().MethodByName(name); ok {
			t.Errorf("*Lock has method %s", name)
		}
	}
}
