package redislock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// semPermits is the companion hash of a semaphore key with a hash tag.
func semPermits(key string) string { return key + ":redislock:permits" }

func TestSemaphoreLimit(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		sem := redislock.New(rdb).Semaphore(redistest.Key(t, "sem"), 3)
		var permits []*redislock.Permit
		for i := range 3 {
			p, err := sem.Acquire(ctx, time.Minute, &redislock.Options{Metadata: "job" + strconv.Itoa(i)})
			if err != nil {
				t.Fatalf("Acquire %d: %v", i, err)
			}
			permits = append(permits, p)
		}
		if _, err := sem.Acquire(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("fourth Acquire: %v, want ErrNotObtained", err)
		}
		holders, err := sem.Holders(ctx)
		if err != nil {
			t.Fatalf("Holders: %v", err)
		}
		if len(holders) != 3 {
			t.Fatalf("Holders = %+v, want 3", holders)
		}
		byToken := map[string]redislock.PermitInfo{}
		for _, h := range holders {
			byToken[h.Token] = h
		}
		for _, p := range permits {
			h, ok := byToken[p.Token()]
			if !ok || h.Metadata != p.Metadata() || h.TTL <= 0 || h.TTL > time.Minute {
				t.Errorf("holder of %s = %+v (found %v), want metadata %q and a TTL in (0, 1m]", p.Token(), h, ok, p.Metadata())
			}
		}
		if err := permits[1].Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if err := permits[1].Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Fatalf("second Release: %v, want ErrLockNotHeld", err)
		}
		p, err := sem.Acquire(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("Acquire after a release: %v", err)
		}
		for _, q := range []*redislock.Permit{permits[0], permits[2], p} {
			if err := q.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
		}
		// Nothing is left behind.
		if n, err := rdb.Exists(ctx, sem.Key(), semPermits(sem.Key())).Result(); err != nil || n != 0 {
			t.Fatalf("keys left after every release: %d, %v", n, err)
		}
	})
}

// Under 64 goroutines on 8 clients, the holders that believe (by the local
// validity of their lease) they hold a permit are never more than the limit.
func TestSemaphoreLimitUnderContention(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			t.Parallel()
			const limit, clients, workers, rounds = 4, 8, 64, 6
			key := redistest.Key(t, "sem")
			sems := make([]redislock.Semaphore, clients)
			for i := range sems {
				sems[i] = redislock.New(topo.NewClient(t)).Semaphore(key, limit)
			}
			var (
				mu       sync.Mutex
				holding  int
				most     int
				acquired atomic.Int64
				wg       sync.WaitGroup
			)
			ctx := context.Background()
			opt := &redislock.Options{RetryStrategy: redislock.LinearBackoff(2 * time.Millisecond)}
			errs := make(chan error, workers)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem := sems[w%clients]
					for range rounds {
						ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
						p, err := sem.Acquire(ctx, 10*time.Second, opt)
						cancel()
						if err != nil {
							errs <- err
							return
						}
						ka, err := p.KeepAlive(10*time.Second, nil)
						if err != nil {
							errs <- err
							return
						}
						mu.Lock()
						valid := time.Now().Before(ka.ValidUntil())
						if valid {
							holding++
							most = max(most, holding)
						}
						mu.Unlock()
						acquired.Add(1)
						time.Sleep(time.Millisecond) // the work under the permit
						mu.Lock()
						if valid {
							holding--
						}
						mu.Unlock()
						if err := p.Release(ctx); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("worker: %v", err)
			}
			if most > limit {
				t.Fatalf("%d holders at once, limit %d", most, limit)
			}
			if got := acquired.Load(); got != workers*rounds {
				t.Fatalf("%d acquisitions, want %d", got, workers*rounds)
			}
			t.Logf("%d acquisitions, at most %d holders at once", acquired.Load(), most)
		})
	}
}

// A crashed holder's permit stops counting when its TTL passes. Its expiry
// is forced by an admin rewrite of its score to a past server time (PEXPIRE
// cannot expire one member of a sorted set): the next Acquire, on another
// client, gets the slot, and the crashed holder's Release, Refresh and
// KeepAlive all see it lost.
func TestSemaphoreExpiredPermit(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := redistest.Key(t, "sem")
		sem := redislock.New(rdb).Semaphore(key, 1)
		crashed, err := sem.Acquire(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if _, err := sem.Acquire(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("Acquire while held: %v, want ErrNotObtained", err)
		}
		ka, err := crashed.KeepAlive(time.Minute, nil)
		if err != nil {
			t.Fatalf("KeepAlive: %v", err)
		}
		defer ka.Stop()
		expire(t, rdb, key, crashed.Token())
		if d, err := crashed.TTL(ctx); err != nil || d != 0 {
			t.Fatalf("TTL of the expired permit = %v, %v; want 0, nil", d, err)
		}
		other, err := redislock.New(rdb).Semaphore(key, 1).Acquire(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("Acquire after the expiry: %v", err)
		}
		if err := crashed.Refresh(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("Refresh of the expired permit: %v, want ErrNotObtained", err)
		}
		<-ka.Done() // the Refresh's loss ends the keep-alive at once
		if err := ka.Err(); !errors.Is(err, redislock.ErrLockLost) || !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("keep-alive Err = %v, want ErrLockLost and ErrNotObtained", err)
		}
		if err := crashed.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Fatalf("Release of the expired permit: %v, want ErrLockNotHeld", err)
		}
		// The other's permit is untouched.
		if d, err := other.TTL(ctx); err != nil || d <= 0 {
			t.Fatalf("TTL of the new holder after the old one's Release = %v, %v", d, err)
		}
		if _, err := sem.Acquire(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("Acquire after the stale Release: %v, want ErrNotObtained (the new permit still counts)", err)
		}
		if err := other.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
	})
}

// expire rewrites the score of token's permit to a past server time, as if
// its TTL had passed.
func expire(t *testing.T, rdb redis.UniversalClient, key, token string) {
	t.Helper()
	ctx := context.Background()
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	n, err := rdb.ZAddXX(ctx, key, redis.Z{Score: float64(now.UnixMilli() - 1), Member: token}).Result()
	if err != nil || n != 0 {
		t.Fatalf("ZADD XX: %d, %v", n, err)
	}
	if s, err := rdb.ZScore(ctx, key, token).Result(); err != nil || s >= float64(now.UnixMilli()) {
		t.Fatalf("score after ZADD XX: %v, %v", s, err)
	}
}

// The keep-alive signals the loss of a permit that expired while it ran.
func TestSemaphoreKeepAliveSignalsLoss(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := redistest.Key(t, "sem")
		p, err := redislock.New(rdb).Semaphore(key, 2).Acquire(ctx, 300*time.Millisecond, nil)
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		ka, err := p.KeepAlive(300*time.Millisecond, &redislock.KeepAliveOptions{Interval: 50 * time.Millisecond})
		if err != nil {
			t.Fatalf("KeepAlive: %v", err)
		}
		defer ka.Stop()
		// The permit is removed behind the holder's back; the next refresh
		// finds it gone.
		if err := rdb.ZRem(ctx, key, p.Token()).Err(); err != nil {
			t.Fatalf("ZREM: %v", err)
		}
		select {
		case <-ka.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("keep-alive did not end")
		}
		if err := ka.Err(); !errors.Is(err, redislock.ErrLockLost) || !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("keep-alive Err = %v, want ErrLockLost and ErrNotObtained", err)
		}
	})
}

func TestSemaphoreRefreshAndTTL(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := redistest.Key(t, "sem")
		sem := redislock.New(rdb).Semaphore(key, 2)
		p, err := sem.Acquire(ctx, 10*time.Second, &redislock.Options{Metadata: "m"})
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		defer func() { _ = p.Release(ctx) }()
		// A permit without metadata nor fence token has no hash field.
		bare, err := sem.Acquire(ctx, 5*time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if n, err := rdb.HLen(ctx, semPermits(key)).Result(); err != nil || n != 1 {
			t.Fatalf("HLEN of the permit hash = %d, %v; want 1", n, err)
		}
		defer func() { _ = bare.Release(ctx) }()
		if err := p.Refresh(ctx, time.Hour, nil); err != nil {
			t.Fatalf("Refresh: %v", err)
		}
		d, err := p.TTL(ctx)
		if err != nil || d <= 59*time.Minute || d > time.Hour {
			t.Fatalf("TTL after Refresh(1h) = %v, %v", d, err)
		}
		// Both keys expire with the last live permit.
		for _, k := range []string{key, semPermits(key)} {
			if pttl, err := rdb.PTTL(ctx, k).Result(); err != nil || pttl <= 59*time.Minute {
				t.Errorf("PTTL %s = %v, %v; want about 1h", k, pttl, err)
			}
		}
	})
}

// Mixed limits: a permit is granted only while fewer than the caller's own
// limit are live; permits granted under a larger limit stay.
func TestSemaphoreMixedLimits(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := redistest.Key(t, "sem")
		c := redislock.New(rdb)
		big, small := c.Semaphore(key, 3), c.Semaphore(key, 1)
		a, err := small.Acquire(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("small Acquire: %v", err)
		}
		if _, err := small.Acquire(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("second small Acquire: %v, want ErrNotObtained", err)
		}
		b, err := big.Acquire(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("big Acquire with 1 live: %v", err)
		}
		cc, err := big.Acquire(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("big Acquire with 2 live: %v", err)
		}
		if _, err := big.Acquire(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("big Acquire with 3 live: %v, want ErrNotObtained", err)
		}
		_ = a.Release(ctx)
		if _, err := small.Acquire(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("small Acquire with 2 live: %v, want ErrNotObtained", err)
		}
		_ = b.Release(ctx)
		_ = cc.Release(ctx)
		d, err := small.Acquire(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("small Acquire with none live: %v", err)
		}
		_ = d.Release(ctx)
	})
}

func TestSemaphoreFenceTokensIncrease(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key, fence := redistest.Key(t, "sem"), redistest.Key(t, "fence")
		sem := redislock.New(rdb).Semaphore(key, 3)
		opt := &redislock.Options{FenceKey: fence}
		var prev int64
		var held []*redislock.Permit
		for i := range 9 {
			p, err := sem.Acquire(ctx, time.Minute, opt)
			if err != nil {
				t.Fatalf("Acquire %d: %v", i, err)
			}
			if p.FenceToken() <= prev {
				t.Fatalf("permit %d: fence token %d, want > %d", i, p.FenceToken(), prev)
			}
			prev = p.FenceToken()
			held = append(held, p)
			if len(held) == 3 {
				for _, q := range held {
					_ = q.Release(ctx)
				}
				held = held[:0]
			}
		}
		// A lock on the same counter continues the sequence.
		lock, err := redislock.Obtain(ctx, rdb, redistest.Key(t, "lock"), time.Minute, opt)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		if lock.FenceToken() <= prev {
			t.Fatalf("lock's fence token %d, want > %d", lock.FenceToken(), prev)
		}
		_ = lock.Release(ctx)
		// Holders reports the fence token; a re-entrant acquire keeps it.
		p, err := sem.Acquire(ctx, time.Minute, &redislock.Options{FenceKey: fence, Token: "mine", Metadata: "m1"})
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		again, err := sem.Acquire(ctx, time.Minute, &redislock.Options{FenceKey: fence, Token: "mine", Metadata: "m2"})
		if err != nil || again.FenceToken() != p.FenceToken() {
			t.Fatalf("re-entrant Acquire: fence %d, %v; want %d", again.FenceToken(), err, p.FenceToken())
		}
		holders, err := sem.Holders(ctx)
		if err != nil || len(holders) != 1 || holders[0].Token != "mine" || holders[0].FenceToken != p.FenceToken() || holders[0].Metadata != "m2" {
			t.Fatalf("Holders = %+v, %v", holders, err)
		}
		_ = again.Release(ctx)
	})
}

// Bad input gets a typed error before anything is sent.
func TestSemaphoreBadInput(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.DeadAddr(t)})
	defer func() { _ = rdb.Close() }()
	faulty := newFaultyClient(rdb)
	c := redislock.New(faulty)
	cases := []struct {
		name string
		sem  redislock.Semaphore
		ttl  time.Duration
		opt  *redislock.Options
		want error
	}{
		{"limit 0", c.Semaphore("k", 0), time.Second, nil, redislock.ErrInvalidLimit},
		{"limit -1", c.Semaphore("k", -1), time.Second, nil, redislock.ErrInvalidLimit},
		{"empty key", c.Semaphore("", 1), time.Second, nil, redislock.ErrInvalidKey},
		{"brace without tag", c.Semaphore("a}b", 1), time.Second, nil, redislock.ErrInvalidKey},
		{"fence is the key", c.Semaphore("k", 1), time.Second, &redislock.Options{FenceKey: "k"}, redislock.ErrInvalidKey},
		{"ttl", c.Semaphore("k", 1), time.Microsecond, nil, redislock.ErrInvalidTTL},
		{"min replicas", c.Semaphore("k", 1), time.Second, &redislock.Options{MinReplicas: 1}, redislock.ErrInvalidOption},
		{"token of a reserved slot", c.Semaphore("k", 2), time.Second, &redislock.Options{Token: "~1764590000000000.1-0"}, redislock.ErrInvalidToken},
		{"nil client", (*redislock.Client)(nil).Semaphore("k", 1), time.Second, nil, redislock.ErrNilClient},
	}
	for _, tc := range cases {
		if _, err := tc.sem.Acquire(ctx, tc.ttl, tc.opt); !errors.Is(err, tc.want) {
			t.Errorf("%s: Acquire: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := c.Semaphore("k", 0).Holders(ctx); !errors.Is(err, redislock.ErrInvalidLimit) {
		t.Errorf("Holders with limit 0: %v", err)
	}
	if n := faulty.calls(); n != 0 {
		t.Fatalf("%d script calls sent for bad input", n)
	}
	var p *redislock.Permit
	if p.Key() != "" || p.Token() != "" || p.Metadata() != "" || p.FenceToken() != 0 {
		t.Error("nil Permit accessors")
	}
	if err := p.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("nil Release: %v", err)
	}
	if err := p.Refresh(ctx, time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("nil Refresh: %v", err)
	}
	if _, err := p.TTL(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("nil TTL: %v", err)
	}
	if _, err := p.KeepAlive(time.Second, nil); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("nil KeepAlive: %v", err)
	}
}

// On a Cluster, a fence key in another slot is refused before sending.
func TestSemaphoreCrossSlotFence(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			rdb := topo.NewClient(t)
			if _, ok := rdb.(*redis.ClusterClient); !ok {
				t.Skip("not a cluster")
			}
			sem := redislock.New(rdb).Semaphore("{a}sem", 1)
			_, err := sem.Acquire(context.Background(), time.Second, &redislock.Options{FenceKey: "{b}fence"})
			var cross *redislock.CrossSlotError
			if !errors.As(err, &cross) || !errors.Is(err, redislock.ErrCrossSlot) {
				t.Fatalf("Acquire with a fence key in another slot: %v, want *CrossSlotError", err)
			}
		})
	}
}

// An untagged key works on every topology: its companion is put in braces,
// in the same slot.
func TestSemaphoreUntaggedKey(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := strings.Trim(redistest.Tag(t), "{}") + ":sem" // no braces: untagged
		sem := redislock.New(rdb).Semaphore(key, 1)
		p, err := sem.Acquire(ctx, time.Minute, &redislock.Options{Metadata: "x"})
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if n, err := rdb.Exists(ctx, "{"+key+"}:redislock:permits:untagged").Result(); err != nil || n != 1 {
			t.Fatalf("companion hash: %d, %v", n, err)
		}
		if err := p.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
	})
}
