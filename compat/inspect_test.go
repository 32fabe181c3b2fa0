package compat_test

import (
	"context"
	"testing"
	"time"

	bsm "github.com/bsm/redislock"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// A key written by bsm/redislock is reported as held, in a format we do not
// know: not as an error.
func TestInspectForeignLock(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	key := redistest.Key(t, "job")
	theirs, err := bsm.Obtain(ctx, rdb, key, time.Minute, &bsm.Options{Metadata: "bsm"})
	if err != nil {
		t.Fatalf("bsm Obtain: %v", err)
	}
	defer theirs.Release(ctx)
	info, err := redislock.New(rdb).Inspect(ctx, key)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	if !info.Held || !info.Foreign || info.Token != "" || info.FenceToken != 0 || info.Metadata != "" {
		t.Errorf("Inspect of a bsm lock = %+v; want held, foreign, no token", info)
	}
	if info.Value != theirs.Token()+"bsm" || info.TTL <= 50*time.Second {
		t.Errorf("Inspect Value, TTL = %q, %v; want bsm's token+metadata, about 1m", info.Value, info.TTL)
	}
}
