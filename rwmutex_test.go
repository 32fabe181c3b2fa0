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

// rwKeys returns the keys of rw: W, R, H, Q, each the name followed by
// ":redislock:rw:" and its role, or, for a name without a hash tag, built
// on "{name}" and followed by ":untagged"; then the wait queues and
// liveness sets of W and R (WQ, RQ, WA, RA).
func rwKeys(rw *redislock.RWMutex) []string {
	prefix, suffix := rw.Name()+":redislock:rw:", ""
	if !strings.Contains(rw.Name(), "{") {
		prefix, suffix = "{"+rw.Name()+"}:redislock:rw:", ":untagged"
	}
	var keys []string
	for _, role := range []string{"writer", "readers", "holds", "writers"} {
		keys = append(keys, prefix+role+suffix)
	}
	return append(keys, waitQueue(keys[0]), waitQueue(keys[1]), aliveSet(keys[0]), aliveSet(keys[1]))
}

// Indexes into rwKeys.
const (
	rwW = iota
	rwR
	rwH
	rwQ
	rwWQ
	rwRQ
	rwWA
	rwRA
)

// checkRWExpiry fails t when a key of rw exists without an expiry.
func checkRWExpiry(t *testing.T, rdb redis.Cmdable, rw *redislock.RWMutex) {
	t.Helper()
	for _, k := range rwKeys(rw) {
		if d := rdb.PTTL(context.Background(), k).Val(); d == -1 {
			t.Errorf("key %s has no expiry", k)
		}
	}
}

// serverMillis returns the server's clock in milliseconds.
func serverMillis(t *testing.T, rdb redis.UniversalClient, key string) int64 {
	t.Helper()
	// On a Cluster, ask the node that serves key.
	v, err := rdb.Eval(context.Background(), `local t = redis.call("TIME") return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`, []string{key}).Int64()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	return v
}

// expireRead makes the read hold of token expire now on the server, as if
// its TTL had run out, by moving its expiry score to the present.
func expireRead(t *testing.T, rdb redis.UniversalClient, rw *redislock.RWMutex, token string) {
	t.Helper()
	k := rwKeys(rw)[rwR]
	now := serverMillis(t, rdb, k)
	if err := rdb.ZAddXX(context.Background(), k, redis.Z{Score: float64(now), Member: token}).Err(); err != nil {
		t.Fatalf("ZADD XX %s: %v", k, err)
	}
}

// waitMembers returns once the sorted set key has a member: a waiter that
// failed an attempt is registered in one.
func waitMembers(t *testing.T, rdb redis.Cmdable, key string) {
	t.Helper()
	for {
		n, err := rdb.ZCard(context.Background(), key).Result()
		if err != nil {
			t.Fatalf("ZCARD %s: %v", key, err)
		}
		if n > 0 {
			return
		}
	}
}

var rwPoll = &redislock.Options{RetryStrategy: redislock.LinearBackoff(2 * time.Millisecond)}

func TestRWMutexReadersShare(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		rw := redislock.New(rdb).RWMutex(redistest.Key(t, "rw"))
		const n = 8
		var holds []*redislock.ReadLock
		for i := 0; i < n; i++ {
			r, err := rw.RLock(ctx, time.Minute, &redislock.Options{Metadata: "reader " + strconv.Itoa(i)})
			if err != nil {
				t.Fatalf("RLock %d with %d readers holding: %v", i, i, err)
			}
			holds = append(holds, r)
		}
		if got := rdb.ZCard(ctx, rwKeys(rw)[rwR]).Val(); got != n {
			t.Errorf("read holds on the server = %d, want %d", got, n)
		}
		if _, err := rw.Lock(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("Lock with %d readers: got %v, want ErrNotObtained", n, err)
		}
		if mustExist(t, rdb, rw.WriterKey()) {
			t.Error("a refused Lock wrote the writer key")
		}
		if got := holds[3].Metadata(); got != "reader 3" {
			t.Errorf("Metadata = %q", got)
		}
		if d, err := holds[0].TTL(ctx); err != nil || d < 59*time.Second || d > time.Minute {
			t.Errorf("TTL = %v, %v; want about 1m", d, err)
		}
		if err := holds[0].Refresh(ctx, 2*time.Minute, nil); err != nil {
			t.Errorf("Refresh: %v", err)
		}
		if d, _ := holds[0].TTL(ctx); d < 119*time.Second {
			t.Errorf("TTL after Refresh(2m) = %v", d)
		}
		checkRWExpiry(t, rdb, rw)
		for i, r := range holds {
			if err := r.Release(ctx); err != nil {
				t.Errorf("Release %d: %v", i, err)
			}
		}
		if err := holds[0].Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Errorf("second Release: got %v, want ErrLockNotHeld", err)
		}
		if err := holds[0].Refresh(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("Refresh of a released hold: got %v, want ErrNotObtained", err)
		}
		w, err := rw.Lock(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("Lock once every reader released: %v", err)
		}
		if err := w.Release(ctx); err != nil {
			t.Errorf("Release of the write lock: %v", err)
		}
	})
}

func TestRWMutexWriterExcludes(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		rw := redislock.New(rdb).RWMutex(redistest.Key(t, "rw"))
		r, err := rw.RLock(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("RLock: %v", err)
		}
		got := make(chan error, 1)
		var w *redislock.WriteLock
		go func() {
			var err error
			w, err = rw.Lock(ctx, time.Minute, rwPoll)
			got <- err
		}()
		// The writer is registered once it has failed an attempt.
		waitMembers(t, rdb, rwKeys(rw)[rwQ])
		select {
		case err := <-got:
			t.Fatalf("Lock returned %v while a reader held", err)
		default:
		}
		if err := r.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if err := <-got; err != nil {
			t.Fatalf("Lock after the reader left: %v", err)
		}
		if v := mustGet(t, rdb, rw.WriterKey()); v == "" {
			t.Error("the writer key is not set while the write lock is held")
		}
		if _, err := rw.RLock(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("RLock with a writer: got %v, want ErrNotObtained", err)
		}
		if _, err := rw.Lock(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("second Lock: got %v, want ErrNotObtained", err)
		}
		if d, err := w.TTL(ctx); err != nil || d < 59*time.Second {
			t.Errorf("TTL = %v, %v", d, err)
		}
		if err := w.Refresh(ctx, 2*time.Minute, nil); err != nil {
			t.Errorf("Refresh: %v", err)
		}
		checkRWExpiry(t, rdb, rw)
		if err := w.Release(ctx); err != nil {
			t.Errorf("Release: %v", err)
		}
		if err := w.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Errorf("second Release: got %v, want ErrLockNotHeld", err)
		}
		r2, err := rw.RLock(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("RLock after the writer left: %v", err)
		}
		_ = r2.Release(ctx)
	})
}

// TestRWMutexWriterPreference: 8 readers keep taking and releasing read
// holds, so that some are always held; a writer that starts waiting gets
// in within 2 read TTLs, and new readers are refused meanwhile.
func TestRWMutexWriterPreference(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rw := redislock.New(rdb).RWMutex(redistest.Key(t, "rw"))
		const readTTL = 2 * time.Second
		var wg sync.WaitGroup
		var reads atomic.Int64
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Each reader takes its next hold before it releases the
				// last one, so that without writer preference some hold
				// is always live; a refused reader releases, then waits.
				var r *redislock.ReadLock
				for ctx.Err() == nil {
					next, err := rw.RLock(ctx, readTTL, nil)
					if err != nil {
						_ = r.Release(context.Background())
						next, err = rw.RLock(ctx, readTTL, rwPoll)
					} else {
						_ = r.Release(context.Background())
					}
					if err != nil {
						r = nil
						continue
					}
					r = next
					reads.Add(1)
					time.Sleep(2 * time.Millisecond) // the work a reader does
				}
				_ = r.Release(context.Background())
			}()
		}
		for reads.Load() < 16 {
			time.Sleep(time.Millisecond)
		}
		start := time.Now()
		wctx, wcancel := context.WithTimeout(context.Background(), 2*readTTL)
		defer wcancel()
		w, err := rw.Lock(wctx, time.Minute, &redislock.Options{RetryStrategy: redislock.LinearBackoff(5 * time.Millisecond)})
		waited := time.Since(start)
		if err != nil {
			t.Fatalf("Lock behind 8 readers: %v after %v", err, waited)
		}
		if waited > 2*readTTL {
			t.Errorf("writer waited %v behind readers, want under %v", waited, 2*readTTL)
		}
		if n := rdb.ZCount(ctx, rwKeys(rw)[rwR], "("+strconv.FormatInt(serverMillis(t, rdb, rw.WriterKey()), 10), "+inf").Val(); n != 0 {
			t.Errorf("%d read holds live while the writer holds", n)
		}
		t.Logf("writer waited %v behind 8 re-acquiring readers (%d reads before)", waited, reads.Load())
		_ = w.Release(context.Background())
		cancel()
		wg.Wait()
	})
}

// TestRWMutexWaitingWriterBlocksNewReaders: a reader arriving while a
// writer waits is refused, even with readers holding; when the writer gives
// up, its registration is withdrawn and readers enter again at once.
func TestRWMutexWaitingWriterBlocksNewReaders(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		rw := redislock.New(rdb).RWMutex(redistest.Key(t, "rw"))
		r, err := rw.RLock(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("RLock: %v", err)
		}
		wctx, cancel := context.WithCancel(ctx)
		got := make(chan error, 1)
		go func() {
			_, err := rw.Lock(wctx, time.Minute, rwPoll)
			got <- err
		}()
		waitMembers(t, rdb, rwKeys(rw)[rwQ])
		if _, err := rw.RLock(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("RLock while a writer waits: got %v, want ErrNotObtained", err)
		}
		cancel()
		if err := <-got; !errors.Is(err, redislock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
			t.Errorf("Lock cancelled: got %v, want ErrNotObtained and context.Canceled", err)
		}
		if n := rdb.ZCard(ctx, rwKeys(rw)[rwQ]).Val(); n != 0 {
			t.Errorf("%d writer registrations left after the writer gave up", n)
		}
		r2, err := rw.RLock(ctx, time.Minute, nil)
		if err != nil {
			t.Errorf("RLock after the waiting writer gave up: %v", err)
		}
		_ = r2.Release(ctx)
		_ = r.Release(ctx)
	})
}

// TestRWMutexReadersNotStarved: 4 writers keep taking the write lock in
// turn, so that one is always waiting; a reader still gets in, admitted
// after the writer it waited behind.
func TestRWMutexReadersNotStarved(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rw := redislock.New(rdb).RWMutex(redistest.Key(t, "rw"))
		var wg sync.WaitGroup
		var writes atomic.Int64
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					w, err := rw.Lock(ctx, 10*time.Second, rwPoll)
					if err != nil {
						continue
					}
					writes.Add(1)
					time.Sleep(2 * time.Millisecond)
					_ = w.Release(context.Background())
				}
			}()
		}
		for writes.Load() < 8 {
			time.Sleep(time.Millisecond)
		}
		for i := 0; i < 3; i++ {
			before := writes.Load()
			rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
			r, err := rw.RLock(rctx, time.Minute, rwPoll)
			rcancel()
			if err != nil {
				t.Fatalf("RLock %d among 4 writers: %v (%d writes meanwhile)", i, err, writes.Load()-before)
			}
			if n := writes.Load() - before; n > 8 {
				t.Errorf("reader %d waited for %d writes, want at most 8", i, n)
			}
			_ = r.Release(context.Background())
		}
		cancel()
		wg.Wait()
	})
}

func TestRWMutexUpgradeRefused(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		rw := redislock.New(rdb).RWMutex(redistest.Key(t, "rw"))
		r, err := rw.RLock(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("RLock: %v", err)
		}
		if _, err := rw.Lock(ctx, time.Minute, &redislock.Options{Token: r.Token(), RetryStrategy: redislock.LinearBackoff(time.Millisecond)}); !errors.Is(err, redislock.ErrUpgrade) {
			t.Errorf("Lock with a read hold's token: got %v, want ErrUpgrade", err)
		}
		if n := rdb.ZCard(ctx, rwKeys(rw)[rwQ]).Val(); n != 0 {
			t.Errorf("a refused upgrade left %d writer registrations", n)
		}
		_ = r.Release(ctx)

		w, err := rw.Lock(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		if _, err := rw.RLock(ctx, time.Minute, &redislock.Options{Token: w.Token()}); !errors.Is(err, redislock.ErrInvalidToken) {
			t.Errorf("RLock with the writer's token: got %v, want ErrInvalidToken", err)
		}
		again, err := rw.Lock(ctx, time.Minute, &redislock.Options{Token: w.Token()})
		if err != nil {
			t.Errorf("Lock again with the writer's token: %v, want a renewal", err)
		} else if again.Token() != w.Token() {
			t.Errorf("re-entrant Lock token %q, want %q", again.Token(), w.Token())
		}
		_ = w.Release(ctx)
	})
}

func TestRWMutexDowngrade(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		rw := redislock.New(rdb).RWMutex(redistest.Key(t, "rw"))
		fence := redistest.Key(t, "fence")
		w, err := rw.Lock(ctx, time.Minute, &redislock.Options{FenceKey: fence, Metadata: "m"})
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		// A reader waits behind the writer; then a second writer waits too.
		rgot := make(chan *redislock.ReadLock, 1)
		go func() {
			r, err := rw.RLock(ctx, time.Minute, &redislock.Options{FenceKey: fence, RetryStrategy: redislock.LinearBackoff(2 * time.Millisecond)})
			if err != nil {
				t.Errorf("waiting RLock: %v", err)
			}
			rgot <- r
		}()
		waitMembers(t, rdb, rwKeys(rw)[rwRQ])
		var stop atomic.Bool
		var slipped atomic.Bool
		wdone := make(chan struct{})
		go func() {
			defer close(wdone)
			for !stop.Load() {
				w2, err := rw.Lock(ctx, time.Minute, &redislock.Options{FenceKey: fence, RetryStrategy: redislock.LimitRetry(redislock.LinearBackoff(time.Millisecond), 1)})
				if err == nil {
					slipped.Store(true)
					_ = w2.Release(ctx)
					return
				}
			}
		}()
		waitMembers(t, rdb, rwKeys(rw)[rwQ])
		r, err := w.Downgrade(ctx, time.Minute)
		if err != nil {
			t.Fatalf("Downgrade: %v", err)
		}
		waiter := <-rgot
		stop.Store(true)
		<-wdone
		if slipped.Load() {
			t.Error("a writer took the lock while the downgraded hold was held")
		}
		if r.FenceToken() != w.FenceToken() || r.FenceToken() == 0 {
			t.Errorf("downgraded hold's fence %d, want the write's %d", r.FenceToken(), w.FenceToken())
		}
		if r.Token() != w.Token() || r.Metadata() != "m" {
			t.Errorf("downgraded hold %q/%q, want the writer's token and metadata", r.Token(), r.Metadata())
		}
		if waiter == nil || waiter.FenceToken() != w.FenceToken() {
			t.Errorf("the reader admitted with the downgrade has fence %d, want %d", waiter.FenceToken(), w.FenceToken())
		}
		if mustExist(t, rdb, rw.WriterKey()) {
			t.Error("the writer key is still set after Downgrade")
		}
		if err := w.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Errorf("Release of the downgraded write lock: got %v, want ErrLockNotHeld", err)
		}
		if _, err := w.Downgrade(ctx, time.Minute); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Errorf("second Downgrade: got %v, want ErrLockNotHeld", err)
		}
		if d, err := r.TTL(ctx); err != nil || d < 59*time.Second {
			t.Errorf("downgraded hold TTL = %v, %v", d, err)
		}
		_ = waiter.Release(ctx)
		if err := r.Release(ctx); err != nil {
			t.Errorf("Release of the downgraded hold: %v", err)
		}
		checkRWExpiry(t, rdb, rw)
	})
}

// TestRWMutexCrashedReaderExpires: a reader that never releases blocks a
// writer until its TTL, counted on the server, and no longer.
func TestRWMutexCrashedReaderExpires(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		rw := redislock.New(rdb).RWMutex(redistest.Key(t, "rw"))
		before := serverMillis(t, rdb, rw.WriterKey())
		r, err := rw.RLock(ctx, 30*time.Second, nil)
		if err != nil {
			t.Fatalf("RLock: %v", err)
		}
		after := serverMillis(t, rdb, rw.WriterKey())
		score := int64(rdb.ZScore(ctx, rwKeys(rw)[rwR], r.Token()).Val())
		if score < before+30000 || score > after+30000 {
			t.Errorf("read hold expires at server time %d, want %d..%d (ttl after the script ran)", score, before+30000, after+30000)
		}
		if _, err := rw.Lock(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("Lock before the reader's TTL: got %v, want ErrNotObtained", err)
		}
		expireRead(t, rdb, rw, r.Token()) // the reader's TTL runs out
		if d, err := r.TTL(ctx); err != nil || d != 0 {
			t.Errorf("TTL of an expired hold = %v, %v; want 0", d, err)
		}
		w, err := rw.Lock(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("Lock once the crashed reader's TTL ran out: %v", err)
		}
		if rdb.ZScore(ctx, rwKeys(rw)[rwR], r.Token()).Err() == nil {
			t.Error("the expired read hold was not pruned")
		}
		if err := r.Refresh(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("Refresh of an expired hold: got %v, want ErrNotObtained", err)
		}
		if err := r.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Errorf("Release of an expired hold: got %v, want ErrLockNotHeld", err)
		}
		_ = w.Release(ctx)

		// On the clock: a writer waiting behind a crashed reader of 100 ms
		// gets in after its TTL, not before.
		start := time.Now()
		if _, err := rw.RLock(ctx, 100*time.Millisecond, nil); err != nil {
			t.Fatalf("RLock: %v", err)
		}
		w, err = rw.Lock(ctx, time.Minute, &redislock.Options{RetryStrategy: redislock.LinearBackoff(2 * time.Millisecond)})
		if err != nil {
			t.Fatalf("Lock behind a crashed reader: %v", err)
		}
		if d := time.Since(start); d < 99*time.Millisecond {
			t.Errorf("writer got in %v after a 100ms read hold began", d)
		}
		_ = w.Release(ctx)
	})
}

func TestRWMutexFenceTokens(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		rw := redislock.New(rdb).RWMutex(redistest.Key(t, "rw"))
		opt := &redislock.Options{FenceKey: redistest.Key(t, "fence")}
		var last int64
		for i := 0; i < 5; i++ {
			w, err := rw.Lock(ctx, time.Minute, opt)
			if err != nil {
				t.Fatalf("Lock %d: %v", i, err)
			}
			if w.FenceToken() <= last {
				t.Errorf("write %d fence %d, not above the previous %d", i, w.FenceToken(), last)
			}
			last = w.FenceToken()
			_ = w.Release(ctx)
			r, err := rw.RLock(ctx, time.Minute, opt)
			if err != nil {
				t.Fatalf("RLock %d: %v", i, err)
			}
			if r.FenceToken() != last {
				t.Errorf("read after write %d carries fence %d, want the write's %d", i, r.FenceToken(), last)
			}
			_ = r.Release(ctx)
		}
		// A plain Lock on the same counter continues the sequence.
		l, err := redislock.Obtain(ctx, rdb, redistest.Key(t, "plain"), time.Minute, opt)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		if l.FenceToken() <= last {
			t.Errorf("Lock's fence %d, not above the RWMutex's %d", l.FenceToken(), last)
		}
		_ = l.Release(ctx)
		if r, err := rw.RLock(ctx, time.Minute, nil); err != nil || r.FenceToken() != 0 {
			t.Errorf("RLock without a FenceKey: fence %d, %v; want 0", r.FenceToken(), err)
		}
	})
}

func TestRWMutexKeepAlive(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		rw := redislock.New(rdb).RWMutex(redistest.Key(t, "rw"))
		r, err := rw.RLock(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("RLock: %v", err)
		}
		ka, err := r.KeepAlive(time.Minute, nil)
		if err != nil {
			t.Fatalf("KeepAlive: %v", err)
		}
		if time.Until(ka.ValidUntil()) < 50*time.Second {
			t.Errorf("ValidUntil %v from now", time.Until(ka.ValidUntil()))
		}
		if _, err := r.KeepAlive(time.Minute, nil); !errors.Is(err, redislock.ErrKeepAliveRunning) {
			t.Errorf("second KeepAlive: got %v, want ErrKeepAliveRunning", err)
		}
		if err := r.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if !errors.Is(ka.Err(), redislock.ErrKeepAliveStopped) {
			t.Errorf("keep-alive Err after Release = %v, want ErrKeepAliveStopped", ka.Err())
		}
		w, err := rw.Lock(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		wka, err := w.KeepAlive(time.Minute, nil)
		if err != nil {
			t.Fatalf("write KeepAlive: %v", err)
		}
		expireNow(t, rdb, rw.WriterKey())
		if err := w.Refresh(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("Refresh of an expired write lock: got %v, want ErrNotObtained", err)
		}
		<-wka.Done()
		if !errors.Is(wka.Err(), redislock.ErrLockLost) {
			t.Errorf("write keep-alive Err = %v, want ErrLockLost", wka.Err())
		}
	})
}

func TestRWMutexBadInput(t *testing.T) {
	rdb := redistest.Topologies()[0].NewClient(t)
	f := newFaultyClient(rdb)
	c := redislock.New(f)
	ctx := context.Background()
	good := redistest.Key(t, "rw")
	cases := []struct {
		name string
		rw   *redislock.RWMutex
		ttl  time.Duration
		opt  *redislock.Options
		want error
	}{
		{"empty name", c.RWMutex(""), time.Second, nil, redislock.ErrInvalidKey},
		{"zero ttl", c.RWMutex(good), 0, nil, redislock.ErrInvalidTTL},
		{"fence key is the writer key", c.RWMutex(good), time.Second, &redislock.Options{FenceKey: c.RWMutex(good).WriterKey()}, redislock.ErrInvalidKey},
		{"fence key is a key", c.RWMutex(good), time.Second, &redislock.Options{FenceKey: rwKeys(c.RWMutex(good))[1]}, redislock.ErrInvalidKey},
		{"min replicas", c.RWMutex(good), time.Second, &redislock.Options{MinReplicas: 1}, redislock.ErrInvalidOption},
		{"nil client", (*redislock.Client)(nil).RWMutex(good), time.Second, nil, redislock.ErrNilClient},
		{"nil RWMutex", nil, time.Second, nil, redislock.ErrNilClient},
	}
	for _, tc := range cases {
		if _, err := tc.rw.RLock(ctx, tc.ttl, tc.opt); !errors.Is(err, tc.want) {
			t.Errorf("%s: RLock got %v, want %v", tc.name, err, tc.want)
		}
		if _, err := tc.rw.Lock(ctx, tc.ttl, tc.opt); !errors.Is(err, tc.want) {
			t.Errorf("%s: Lock got %v, want %v", tc.name, err, tc.want)
		}
	}
	if n := f.calls(); n != 0 {
		t.Errorf("bad input sent %d scripts", n)
	}
	var r *redislock.ReadLock
	var w *redislock.WriteLock
	if r.Token() != "" || r.FenceToken() != 0 || r.Release(ctx) != redislock.ErrLockNotHeld || w.Token() != "" || w.Release(ctx) != redislock.ErrLockNotHeld {
		t.Error("nil handles do not behave as not held")
	}
	if _, err := w.Downgrade(ctx, time.Second); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("Downgrade of a nil WriteLock: %v", err)
	}
}

func TestRWMutexCrossSlotFence(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		if !topo.Cluster {
			continue
		}
		t.Run(topo.Name, func(t *testing.T) {
			rdb := topo.NewClient(t)
			rw := redislock.New(rdb).RWMutex(redistest.Key(t, "rw"))
			_, err := rw.Lock(context.Background(), time.Second, &redislock.Options{FenceKey: "elsewhere:fence"})
			var cs *redislock.CrossSlotError
			if !errors.As(err, &cs) {
				t.Errorf("Lock with a fence key in another slot: got %v, want *CrossSlotError", err)
			}
		})
	}
}

// TestRWMutexWaitForRelease: WaitForRelease waits for readers to leave,
// and for the writer (rwmutex_wait_test.go tests how).
func TestRWMutexWaitForRelease(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		rw := redislock.New(rdb).RWMutex(redistest.Key(t, "rw"))
		wait := &redislock.Options{RetryStrategy: redislock.WaitForRelease(nil)}
		r, err := rw.RLock(ctx, time.Minute, wait)
		if err != nil {
			t.Fatalf("RLock: %v", err)
		}
		got := make(chan *redislock.WriteLock, 1)
		go func() {
			w, err := rw.Lock(ctx, time.Minute, wait)
			if err != nil {
				t.Errorf("Lock with WaitForRelease: %v", err)
			}
			got <- w
		}()
		waitMembers(t, rdb, rwKeys(rw)[rwWQ])
		if err := r.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		w := <-got
		rgot := make(chan error, 1)
		go func() {
			r, err := rw.RLock(ctx, time.Minute, wait)
			if err == nil {
				err = r.Release(ctx)
			}
			rgot <- err
		}()
		waitMembers(t, rdb, rwKeys(rw)[rwRQ])
		if err := w.Release(ctx); err != nil {
			t.Fatalf("Release of the write lock: %v", err)
		}
		if err := <-rgot; err != nil {
			t.Errorf("RLock with WaitForRelease behind the writer: %v", err)
		}
	})
}

// TestRWMutexKeysOwnNamespace: the keys of an RWMutex are its own. A plain
// lock named "{name}" (once the writer key of RWMutex("name")) and the
// RWMutex neither block nor release each other, and RWMutex("name") and
// RWMutex("{name}") are two locks.
func TestRWMutexKeysOwnNamespace(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := redislock.New(rdb)
		// A name without a hash tag, unique to the test.
		name := strings.NewReplacer("{", "", "}", "").Replace(redistest.Key(t, "rw"))
		rw := c.RWMutex(name)
		plain, err := c.Obtain(ctx, "{"+name+"}", time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain {%s}: %v", name, err)
		}
		r, err := rw.RLock(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("RLock with a plain lock on {name} held: %v", err)
		}
		if err := r.Release(ctx); err != nil {
			t.Fatalf("Release of the read hold: %v", err)
		}
		w, err := rw.Lock(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("Lock with a plain lock on {name} held: %v", err)
		}
		if err := plain.Release(ctx); err != nil {
			t.Errorf("plain lock's Release with the write lock held: %v", err)
		}
		if d, err := w.TTL(ctx); err != nil || d <= 0 {
			t.Errorf("write lock TTL after the plain lock's release = %v, %v; want it held", d, err)
		}
		// The tagged form of the name is another lock.
		other, err := c.RWMutex("{"+name+"}").Lock(ctx, time.Minute, nil)
		if err != nil {
			t.Errorf("Lock of RWMutex({name}) with RWMutex(name) write-locked: %v", err)
		} else {
			_ = other.Release(ctx)
		}
		for _, k := range append(rwKeys(rw), rwKeys(c.RWMutex("{"+name+"}"))...) {
			if k == "{"+name+"}" || k == name {
				t.Errorf("key %q of an RWMutex is a lock's name", k)
			}
		}
		if err := w.Release(ctx); err != nil {
			t.Errorf("Release of the write lock: %v", err)
		}
	})
}
