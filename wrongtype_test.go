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

// A key used by one primitive and then by another gives a typed error
// that names the key, what it holds and what the call keeps there, on
// every primitive, and changes nothing.
func TestWrongType(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := redislock.New(rdb)
		semKey, lockKey := redistest.Key(t, "sem"), redistest.Key(t, "lock")
		if _, err := c.Semaphore(semKey, 2).Acquire(ctx, time.Minute, nil); err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		lock, err := c.Obtain(ctx, lockKey, time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		rw := c.RWMutex(redistest.Key(t, "rw"))
		if _, err := c.Semaphore(rw.WriterKey(), 2).Acquire(ctx, time.Minute, nil); err != nil {
			t.Fatalf("Acquire on the writer key: %v", err)
		}
		wait := &redislock.Options{RetryStrategy: redislock.WaitForRelease(nil)}
		for _, tc := range []struct {
			name      string
			call      func() error
			key, typ  string
			wantsType string
		}{
			// The scripts' way; a Client's first plain SET NX sees the key
			// only as held (ErrNotObtained), as any value of another kind.
			{"a semaphore's key as a lock", func() error { _, err := redislock.Obtain(ctx, rdb, semKey, time.Minute, nil); return err }, semKey, "zset", "string"},
			{"the same, waiting", func() error { _, err := c.Obtain(ctx, semKey, time.Minute, wait); return err }, semKey, "zset", "string"},
			{"a lock's key as a semaphore", func() error { _, err := c.Semaphore(lockKey, 2).Acquire(ctx, time.Minute, nil); return err }, lockKey, "string", "zset"},
			{"a lock's key as a semaphore, its holders", func() error { _, err := c.Semaphore(lockKey, 2).Holders(ctx); return err }, lockKey, "string", "zset"},
			{"a semaphore's key as an RWMutex's writer", func() error { _, err := rw.Lock(ctx, time.Minute, nil); return err }, rw.WriterKey(), "zset", "string"},
			{"a semaphore's key as an election", func() error { _, err := c.Election(semKey).Leader(ctx); return err }, semKey, "zset", "string"},
		} {
			err := tc.call()
			var wt *redislock.WrongTypeError
			if !errors.Is(err, redislock.ErrWrongType) || !errors.As(err, &wt) {
				t.Errorf("%s: %v, want a *WrongTypeError", tc.name, err)
				continue
			}
			if wt.Key != tc.key || wt.Type != tc.typ || wt.Want != tc.wantsType {
				t.Errorf("%s: key %q holding a %q where a %q is kept; want %q, %q, %q", tc.name, wt.Key, wt.Type, wt.Want, tc.key, tc.typ, tc.wantsType)
			}
			if msg := err.Error(); strings.Count(msg, "\n") > 0 || !strings.Contains(msg, tc.key) {
				t.Errorf("%s: message %q is not one line naming the key", tc.name, msg)
			}
		}
		if got := rdb.Type(ctx, semKey).Val(); got != "zset" {
			t.Errorf("the semaphore's key is now a %q", got)
		}
		if err := lock.Release(ctx); err != nil {
			t.Errorf("the lock was changed: Release = %v", err)
		}
	})
}

// A server without the commands that Semaphore needs (Redis before 7.0,
// here a Redis 7 with PEXPIRETIME renamed away) gives ErrServerTooOld,
// which names the version; locks still work there.
func TestServerTooOld(t *testing.T) {
	srv := redistest.NewServer(t, redistest.Redis, "--rename-command", "PEXPIRETIME", "")
	rdb := srv.Client(t)
	ctx := context.Background()
	c := redislock.New(rdb)
	// With metadata, the permit's hash gets the set's expiry (PEXPIRETIME).
	_, err := c.Semaphore(redistest.Key(t, "sem"), 2).Acquire(ctx, time.Minute, &redislock.Options{Metadata: "m"})
	if !errors.Is(err, redislock.ErrServerTooOld) || !strings.Contains(err.Error(), "7.0") {
		t.Fatalf("Acquire = %v, want ErrServerTooOld naming Redis 7.0", err)
	}
	lock, err := c.Obtain(ctx, redistest.Key(t, "lock"), time.Minute, nil)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
}
