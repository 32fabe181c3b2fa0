package redislock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// A Client from New takes one unfenced key with a generated token with a
// plain SET NX, which writes what the script writes, unless its last such
// attempt found the key held; a fence key, a token of the caller's,
// several keys and the package's shortcuts run the script.
func TestObtainPlainSet(t *testing.T) {
	for _, tp := range redistest.Topologies() {
		t.Run(tp.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rdb, log := hooked(t, tp)
			locker := redislock.New(rdb)
			key := redistest.Key(t, "lock")
			// A connection's setup (HELLO, CLIENT SETINFO) goes through the
			// hook too: dial one first, on every node of a Cluster.
			ping := func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() }
			if cc, ok := rdb.(*redis.ClusterClient); ok {
				if err := cc.ForEachShard(ctx, ping); err != nil {
					t.Fatal(err)
				}
			} else if err := rdb.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			log.take()

			lock, err := locker.Obtain(ctx, key, time.Minute, &redislock.Options{Metadata: "m:1"})
			if err != nil {
				t.Fatalf("Obtain: %v", err)
			}
			if got := log.take(); !slices.Equal(got, []string{"set"}) {
				t.Errorf("Obtain sent %v, want [set]", got)
			}
			plain := mustGet(t, rdb, key)
			if d := rdb.PTTL(ctx, key).Val(); d <= 0 || d > time.Minute {
				t.Errorf("PTTL after Obtain = %v, want within (0, 1m]", d)
			}
			if lock.FenceToken() != 0 || lock.Metadata() != "m:1" {
				t.Errorf("FenceToken %d, Metadata %q; want 0 and m:1", lock.FenceToken(), lock.Metadata())
			}
			log.take()

			// Held: another Client's SET NX fails and leaves the key alone;
			// that Client's next obtains run the script, until one finds
			// the key free.
			other := redislock.New(rdb)
			for i, want := range []string{"set", "evalsha"} {
				if _, err := other.Obtain(ctx, key, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
					t.Fatalf("Obtain %d of the held key: %v, want ErrNotObtained", i+1, err)
				}
				if got := log.take(); !slices.Equal(got, []string{want}) {
					t.Errorf("failed Obtain %d sent %v, want [%s]", i+1, got, want)
				}
			}
			if v := mustGet(t, rdb, key); v != plain {
				t.Errorf("failed Obtain changed the key: %q, was %q", v, plain)
			}
			log.take()
			if err := lock.Refresh(ctx, time.Minute, nil); err != nil {
				t.Fatalf("Refresh: %v", err)
			}
			if err := lock.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if mustExist(t, rdb, key) {
				t.Fatal("key left after Release")
			}
			log.take()
			for i, want := range []string{"evalsha", "set"} {
				l, err := other.Obtain(ctx, key, time.Minute, nil)
				if err != nil {
					t.Fatalf("Obtain %d of the free key: %v", i+1, err)
				}
				if got := log.take(); !slices.Equal(got, []string{want}) {
					t.Errorf("Obtain %d of the free key after a failed one sent %v, want [%s]", i+1, got, want)
				}
				if err := l.Release(ctx); err != nil {
					t.Fatalf("Release %d: %v", i+1, err)
				}
				log.take()
			}

			// The script writes the same value for the same token.
			again, err := locker.Obtain(ctx, key, time.Minute, &redislock.Options{Metadata: "m:1", Token: lock.Token()})
			if err != nil {
				t.Fatalf("Obtain with the token: %v", err)
			}
			if v := mustGet(t, rdb, key); v != plain {
				t.Errorf("the script wrote %q, the plain SET %q", v, plain)
			}
			if err := again.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			log.take()

			for _, c := range []struct {
				what   string
				obtain func() (*redislock.Lock, error)
			}{
				{"with a token", func() (*redislock.Lock, error) {
					return locker.Obtain(ctx, key, time.Minute, &redislock.Options{Token: "mine"})
				}},
				{"with a fence key", func() (*redislock.Lock, error) {
					return locker.Obtain(ctx, key, time.Minute, &redislock.Options{FenceKey: redistest.Key(t, "fence")})
				}},
				{"of two keys", func() (*redislock.Lock, error) {
					return locker.ObtainMulti(ctx, []string{key, redistest.Key(t, "b")}, time.Minute, nil)
				}},
				{"by the shortcut", func() (*redislock.Lock, error) {
					return redislock.Obtain(ctx, rdb, key, time.Minute, nil)
				}},
			} {
				l, err := c.obtain()
				if err != nil {
					t.Fatalf("Obtain %s: %v", c.what, err)
				}
				if got := log.take(); !slices.Equal(got, []string{"evalsha"}) {
					t.Errorf("Obtain %s sent %v, want [evalsha]", c.what, got)
				}
				if err := l.Release(ctx); err != nil {
					t.Fatalf("Release of the lock %s: %v", c.what, err)
				}
				log.take()
			}
		})
	}
}

// lostSetReply runs every command of its client, but the first SET's
// reply is lost: a transient error, after which the key is held by the
// caller's token.
type lostSetReply struct {
	redis.UniversalClient
	mu   sync.Mutex
	lost bool
}

func (c *lostSetReply) Do(ctx context.Context, args ...any) *redis.Cmd {
	cmd := c.UniversalClient.Do(ctx, args...)
	c.mu.Lock()
	defer c.mu.Unlock()
	if name, _ := args[0].(string); c.lost || !strings.EqualFold(name, "set") {
		return cmd
	}
	c.lost = true
	lostCmd := redis.NewCmd(ctx, args...)
	lostCmd.SetErr(errTransient)
	return lostCmd
}

// An attempt after a plain SET whose reply was lost runs the script, which
// takes the key back with the same token: the obtain succeeds without
// waiting for its own key to expire.
func TestObtainPlainSetLostReply(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := redistest.Key(t, "lock")
		client := &lostSetReply{UniversalClient: rdb}
		lock, err := redislock.New(client).Obtain(ctx, key, time.Minute, &redislock.Options{
			RetryStrategy: redislock.LimitRetry(redislock.LinearBackoff(time.Millisecond), 3),
		})
		if err != nil {
			t.Fatalf("Obtain after a lost reply: %v", err)
		}
		if !client.lost {
			t.Fatal("no reply was lost")
		}
		if v := mustGet(t, rdb, key); !strings.HasPrefix(v, "22:"+lock.Token()+":0:") {
			t.Errorf("key holds %q, want the lock's token %s", v, lock.Token())
		}
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if mustExist(t, rdb, key) {
			t.Fatal("key left after Release")
		}
	})
}
