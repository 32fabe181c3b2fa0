package compat_test

import (
	"context"
	"errors"
	"testing"
	"time"

	bsm "github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// During a rolling migration both libraries lock the same keys: each must
// see the other's lock as taken (SPEC section 5).
func TestInteropWithBSMRedislock(t *testing.T) {
	redistest.EachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()

		t.Run("theirs blocks ours", func(t *testing.T) {
			key := redistest.Key(t, "job")
			theirs, err := bsm.Obtain(ctx, rdb, key, time.Minute, &bsm.Options{Metadata: "bsm"})
			if err != nil {
				t.Fatalf("bsm Obtain: %v", err)
			}
			if _, err := redislock.Obtain(ctx, rdb, key, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
				t.Errorf("our Obtain on a bsm-held key: got %v, want ErrNotObtained", err)
			}
			// Not even with bsm's token: the formats differ, so nothing is shared
			// but the fact that the key is taken.
			if _, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{Token: theirs.Token()}); !errors.Is(err, redislock.ErrNotObtained) {
				t.Errorf("our Obtain with bsm's token: got %v, want ErrNotObtained", err)
			}
			if err := theirs.Release(ctx); err != nil {
				t.Errorf("bsm Release after our failed attempts: %v", err)
			}
			ours, err := redislock.Obtain(ctx, rdb, key, time.Minute, nil)
			if err != nil {
				t.Fatalf("our Obtain after bsm released: %v", err)
			}
			_ = ours.Release(ctx)
		})

		t.Run("ours blocks theirs", func(t *testing.T) {
			key := redistest.Key(t, "job")
			ours, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{Metadata: "ours"})
			if err != nil {
				t.Fatalf("our Obtain: %v", err)
			}
			if _, err := bsm.Obtain(ctx, rdb, key, time.Minute, nil); !errors.Is(err, bsm.ErrNotObtained) {
				t.Errorf("bsm Obtain on our key: got %v, want its ErrNotObtained", err)
			}
			if _, err := bsm.Obtain(ctx, rdb, key, time.Minute, &bsm.Options{Token: ours.Token()}); !errors.Is(err, bsm.ErrNotObtained) {
				t.Errorf("bsm Obtain with our token: got %v, want its ErrNotObtained", err)
			}
			if err := ours.Release(ctx); err != nil {
				t.Errorf("our Release after bsm's failed attempts: %v", err)
			}
			theirs, err := bsm.Obtain(ctx, rdb, key, time.Minute, nil)
			if err != nil {
				t.Fatalf("bsm Obtain after we released: %v", err)
			}
			_ = theirs.Release(ctx)
		})

		t.Run("multi", func(t *testing.T) {
			a, b := redistest.Key(t, "a"), redistest.Key(t, "b")
			theirs, err := bsm.Obtain(ctx, rdb, b, time.Minute, nil)
			if err != nil {
				t.Fatalf("bsm Obtain: %v", err)
			}
			if _, err := redislock.ObtainMulti(ctx, rdb, []string{a, b}, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
				t.Errorf("our ObtainMulti over a bsm-held key: got %v, want ErrNotObtained", err)
			}
			if redistest.Exists(t, rdb, a) {
				t.Error("our failed ObtainMulti wrote a key")
			}
			_ = theirs.Release(ctx)
		})
	})
}
