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

func TestInspect(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		locker := redislock.New(rdb)
		key := redistest.Key(t, "job")

		info, err := locker.Inspect(ctx, key)
		if err != nil || info.Held || info.Key != key || info.TTL != 0 {
			t.Errorf("Inspect of a free key = %+v, %v; want not held", info, err)
		}

		lock, err := locker.Obtain(ctx, key, time.Minute, &redislock.Options{
			Token:    "tok:en",
			Metadata: "host:42",
			FenceKey: redistest.Key(t, "fence"),
		})
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		info, err = locker.Inspect(ctx, key)
		if err != nil {
			t.Fatalf("Inspect: %v", err)
		}
		if !info.Held || info.Foreign || info.Token != "tok:en" || info.FenceToken != lock.FenceToken() || info.Metadata != "host:42" {
			t.Errorf("Inspect of our lock = %+v; want held by tok:en, fence %d, metadata host:42", info, lock.FenceToken())
		}
		if info.TTL <= 50*time.Second || info.TTL > time.Minute {
			t.Errorf("Inspect TTL = %v, want about 1m", info.TTL)
		}
		if info.Value != mustGet(t, rdb, key) {
			t.Errorf("Inspect Value = %q, want the stored %q", info.Value, mustGet(t, rdb, key))
		}
		// What Inspect reports is enough to release the lock elsewhere.
		attached, err := locker.Attach([]string{key}, info.Token, info.FenceToken)
		if err != nil {
			t.Fatalf("Attach: %v", err)
		}
		if err := attached.Release(ctx); err != nil {
			t.Errorf("Release by the inspected token: %v", err)
		}

		if err := rdb.Set(ctx, key, "3:abc:0:", 0).Err(); err != nil {
			t.Fatalf("SET: %v", err)
		}
		if info, err := locker.Inspect(ctx, key); err != nil || !info.Held || info.Token != "abc" || info.TTL != -time.Millisecond {
			t.Errorf("Inspect of a key without expiry = %+v, %v; want held by abc, TTL -1ms", info, err)
		}
		if err := rdb.HSet(ctx, key+"h", "f", "v").Err(); err != nil {
			t.Fatalf("HSET: %v", err)
		}
		if info, err := locker.Inspect(ctx, key+"h"); err != nil || !info.Held || !info.Foreign || info.Value != "" || info.Token != "" {
			t.Errorf("Inspect of a hash = %+v, %v; want held, foreign, no value", info, err)
		}
		rdb.Del(ctx, key, key+"h")
	})
}

func TestInspectRejectsBadInput(t *testing.T) {
	locker := redislock.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))
	ctx := context.Background()
	if _, err := locker.Inspect(ctx, ""); !errors.Is(err, redislock.ErrInvalidKey) {
		t.Errorf("Inspect(\"\"): got %v, want ErrInvalidKey", err)
	}
	//lint:ignore SA1012 testing the nil check
	if _, err := locker.Inspect(nil, "k"); !errors.Is(err, redislock.ErrNilContext) { //nolint:staticcheck // SA1012: a nil context is the input under test
		t.Errorf("Inspect with a nil context: got %v, want ErrNilContext", err)
	}
	var nilClient *redislock.Client
	if _, err := nilClient.Inspect(ctx, "k"); !errors.Is(err, redislock.ErrNilClient) {
		t.Errorf("Inspect on a nil Client: got %v, want ErrNilClient", err)
	}
}
