package redislock_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

// primitiveWaiter is one primitive that waits in line, for the tests of
// the line (TestWaitForReleaseArrivalOrder, TestWaitForReleaseStalledWaiter):
// take waits for it with WaitForRelease (TTL 10 s) and returns its
// release; key is what a handover reserves, and reservedFor how long the
// reservation there has left (0: none).
type primitiveWaiter struct {
	key         string
	take        func(ctx context.Context) (func(context.Context) error, error)
	reservedFor func(t *testing.T, admin *redis.Client) time.Duration
}

// reservationValue matches a key reserved for a waiter (lua/handover.lua).
var reservationValue = regexp.MustCompile(`^\d+:~[^:]+:0:$`)

// keyReservedFor returns how long key stays reserved for a waiter, 0 when
// it is not a reservation.
func keyReservedFor(t *testing.T, admin *redis.Client, key string) time.Duration {
	t.Helper()
	ctx := context.Background()
	if v := admin.Get(ctx, key).Val(); !reservationValue.MatchString(v) {
		t.Logf("%s holds %q", key, v)
		return 0
	}
	return admin.PTTL(ctx, key).Val()
}

var primitiveWaiters = map[string]func(c *redislock.Client, name string) primitiveWaiter{
	"lock": func(c *redislock.Client, name string) primitiveWaiter {
		return primitiveWaiter{
			key: name,
			take: func(ctx context.Context) (func(context.Context) error, error) {
				l, err := c.Obtain(ctx, name, 10*time.Second, waitOpt())
				if err != nil {
					return nil, err
				}
				return l.Release, nil
			},
			reservedFor: func(t *testing.T, admin *redis.Client) time.Duration { return keyReservedFor(t, admin, name) },
		}
	},
	"write": func(c *redislock.Client, name string) primitiveWaiter {
		rw := c.RWMutex(name)
		return primitiveWaiter{
			key: rw.WriterKey(),
			take: func(ctx context.Context) (func(context.Context) error, error) {
				w, err := rw.Lock(ctx, 10*time.Second, waitOpt())
				if err != nil {
					return nil, err
				}
				return w.Release, nil
			},
			reservedFor: func(t *testing.T, admin *redis.Client) time.Duration { return keyReservedFor(t, admin, rw.WriterKey()) },
		}
	},
	"campaign": func(c *redislock.Client, name string) primitiveWaiter {
		e := c.Election(name)
		return primitiveWaiter{
			key: name,
			take: func(ctx context.Context) (func(context.Context) error, error) {
				l, err := e.Campaign(ctx, "v", 10*time.Second)
				if err != nil {
					return nil, err
				}
				return l.Resign, nil
			},
			reservedFor: func(t *testing.T, admin *redis.Client) time.Duration { return keyReservedFor(t, admin, name) },
		}
	},
	"permit": func(c *redislock.Client, name string) primitiveWaiter {
		sem := c.Semaphore(name, 1)
		return primitiveWaiter{
			key: name,
			take: func(ctx context.Context) (func(context.Context) error, error) {
				p, err := sem.Acquire(ctx, 10*time.Second, waitOpt())
				if err != nil {
					return nil, err
				}
				return p.Release, nil
			},
			reservedFor: func(t *testing.T, admin *redis.Client) time.Duration {
				ctx := context.Background()
				now, err := admin.Time(ctx).Result()
				if err != nil {
					t.Fatal(err)
				}
				for _, z := range admin.ZRangeWithScores(ctx, name, 0, -1).Val() {
					if m := z.Member.(string); len(m) > 0 && m[0] == '~' {
						return time.Duration(int64(z.Score)-now.UnixMilli()) * time.Millisecond
					}
				}
				t.Logf("%s holds %v", name, admin.ZRangeWithScores(ctx, name, 0, -1).Val())
				return 0
			},
		}
	},
}
