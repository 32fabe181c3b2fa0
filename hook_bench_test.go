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

// Each primitive's take and give back, uncontended, with no hook and with
// a hook that does nothing: a Client without hooks allocates nothing for
// them, and one with hooks one observation per handle.
//
// Run with: go test -run '^$' -bench PrimitiveHooks -benchmem
func BenchmarkPrimitiveHooks(b *testing.B) {
	rdb := redistest.Standalone(b)
	ctx := context.Background()
	ops := []struct {
		name string
		op   func(b *testing.B, c *redislock.Client, key string)
	}{
		{"lock", func(b *testing.B, c *redislock.Client, key string) {
			l, err := c.Obtain(ctx, key, time.Minute, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}},
		{"semaphore", func(b *testing.B, c *redislock.Client, key string) {
			p, err := c.Semaphore(key, 2).Acquire(ctx, time.Minute, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}},
		{"read", func(b *testing.B, c *redislock.Client, key string) {
			r, err := c.RWMutex(key).RLock(ctx, time.Minute, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := r.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}},
		{"write", func(b *testing.B, c *redislock.Client, key string) {
			w, err := c.RWMutex(key).Lock(ctx, time.Minute, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := w.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}},
		{"election", func(b *testing.B, c *redislock.Client, key string) {
			l, err := c.Election(key).Campaign(ctx, "v", time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Resign(ctx); err != nil {
				b.Fatal(err)
			}
		}},
	}
	for _, op := range ops {
		for _, hooked := range []bool{false, true} {
			name := op.name + "/no-hook"
			if hooked {
				name = op.name + "/nop-hook"
			}
			b.Run(name, func(b *testing.B) {
				key := redistest.Key(b, "k")
				c := redislock.New(rdb)
				if hooked {
					c.AddHook(redislock.NopHook{})
				}
				for b.Loop() {
					op.op(b, c, key)
				}
			})
		}
	}
}
