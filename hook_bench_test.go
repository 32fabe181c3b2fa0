package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// Obtain+Release with no hook, and with a hook that does nothing: the cost
// of the hooks themselves. extra/redislockotel's BenchmarkObtainRelease
// adds the OpenTelemetry hooks beside the same two.
//
// Run with: go test -run '^$' -bench ObtainReleaseHooks -benchmem
func BenchmarkObtainReleaseHooks(b *testing.B) {
	rdb := redistest.Standalone(b)
	ctx := context.Background()
	for _, bc := range []struct {
		name  string
		hooks []redislock.Hook
	}{
		{"no-hook", nil},
		{"nop-hook", []redislock.Hook{redislock.NopHook{}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			key := redistest.Key(b, "lock")
			locker := redislock.New(rdb)
			for _, h := range bc.hooks {
				locker.AddHook(h)
			}
			for b.Loop() {
				lock, err := locker.Obtain(ctx, key, time.Minute, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := lock.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
