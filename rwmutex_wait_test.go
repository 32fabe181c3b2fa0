package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// The tests of RWMutex with WaitForRelease: waits through the handoff
// engine, on every topology (forEachWaitTopology, waitforrelease_test.go).
// waitOpt's fallback polls once an hour: what is obtained soon came by an
// event.

type rwGot struct {
	r   *redislock.ReadLock
	w   *redislock.WriteLock
	err error
}

// rlockAsync runs RLock in a goroutine; the result comes on the channel.
func rlockAsync(ctx context.Context, rw *redislock.RWMutex, ttl time.Duration, opt *redislock.Options) <-chan rwGot {
	ch := make(chan rwGot, 1)
	go func() {
		r, err := rw.RLock(ctx, ttl, opt)
		ch <- rwGot{r: r, err: err}
	}()
	return ch
}

// lockAsync runs Lock in a goroutine; the result comes on the channel.
func lockAsync(ctx context.Context, rw *redislock.RWMutex, ttl time.Duration, opt *redislock.Options) <-chan rwGot {
	ch := make(chan rwGot, 1)
	go func() {
		w, err := rw.Lock(ctx, ttl, opt)
		ch <- rwGot{w: w, err: err}
	}()
	return ch
}

// liveReads counts the live read holds of rw on the server.
func liveReads(t *testing.T, admin redis.UniversalClient, rw *redislock.RWMutex) int64 {
	t.Helper()
	k := rwKeys(rw)[rwR]
	return admin.ZCount(context.Background(), k, "("+strconv.FormatInt(serverMillis(t, admin, k), 10), "+inf").Val()
}

// zcard returns the size of sorted set key.
func zcard(admin redis.UniversalClient, key string) int64 {
	return admin.ZCard(context.Background(), key).Val()
}

// loadScripts takes and releases a read hold and the write lock of rw, so
// that the server serving its keys has the scripts: a first EVALSHA
// would fail with NOSCRIPT and count twice in a waitCounter.
func loadScripts(t *testing.T, rw *redislock.RWMutex) {
	t.Helper()
	ctx := context.Background()
	r, err := rw.RLock(ctx, time.Minute, nil)
	if err != nil {
		t.Fatalf("RLock: %v", err)
	}
	_ = r.Release(ctx)
	w, err := rw.Lock(ctx, time.Minute, nil)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	_ = w.Release(ctx)
}

// checkNoKeyForever fails t when a key of the test has no expiry (fence
// counters aside).
func checkNoKeyForever(t *testing.T, admin redis.UniversalClient) {
	t.Helper()
	for _, k := range keysWithoutTTL(t, admin, redistest.Tag(t)+"*") {
		t.Errorf("key %s has no expiry", k)
	}
}

// A writer that waits behind readers is handed the lock by the last of
// them to leave: one failed attempt, one block, and the attempt that ran
// when the release served it.
func TestRWMutexWaitWriterHandedOver(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		name := redistest.Key(t, "rw")
		rw := redislock.New(env.admin).RWMutex(name)
		loadScripts(t, rw)
		var reads []*redislock.ReadLock
		for i := range 3 {
			r, err := rw.RLock(ctx, time.Minute, nil)
			if err != nil {
				t.Fatalf("RLock %d: %v", i, err)
			}
			reads = append(reads, r)
		}
		wname := clientName("writer")
		wc := env.newClient(wname)
		counter := &waitCounter{}
		wc.AddHook(counter)
		done := lockAsync(ctx, redislock.New(wc).RWMutex(name), time.Minute, waitOpt())
		waitUntil(t, "the writer to block", func() bool { return blocked(t, env.admin, wname) })
		for i, r := range reads[:2] {
			if err := r.Release(ctx); err != nil {
				t.Fatalf("Release %d: %v", i, err)
			}
		}
		if mustExist(t, env.admin, rw.WriterKey()) {
			t.Error("the writer key is set while a read hold is live")
		}
		if err := reads[2].Release(ctx); err != nil {
			t.Fatalf("last Release: %v", err)
		}
		got := <-done
		if got.err != nil {
			t.Fatalf("writer: %v", got.err)
		}
		evals, blocks, timeouts, grants := counter.counts()
		// Each block is followed by one attempt; a block may time out on a
		// loaded machine, but no more than one was woken.
		if grants != 1 || evals != 1+blocks || blocks-timeouts > 1 {
			t.Errorf("writer sent %d attempts and %d blocks (%d timed out), obtained with %d grants; want 1 + one per block, at most 1 woken, 1",
				evals, blocks, timeouts, grants)
		}
		if n := zcard(env.admin, rwKeys(rw)[rwWQ]); n != 0 {
			t.Errorf("%d writer registrations left once the writer holds", n)
		}
		if err := got.w.Release(ctx); err != nil {
			t.Errorf("writer's Release: %v", err)
		}
		checkNoKeyForever(t, env.admin)
	})
}

// The readers that waited behind a writer enter together when it leaves,
// each woken (not at the end of its block), even with a writer waiting
// after them; that writer gets in when they have left, and new readers
// wait behind it meanwhile.
func TestRWMutexWaitReadersEnterTogether(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		name := redistest.Key(t, "rw")
		rw := redislock.New(env.admin).RWMutex(name)
		loadScripts(t, rw)
		w1, err := rw.Lock(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		// Three readers on clients of their own, three sharing one.
		const n = 6
		shared := env.newClient(clientName("shared"))
		var counters []*waitCounter
		var names []string
		results := make(chan rwGot, n)
		leave := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			rdb := shared
			if i < 3 {
				names = append(names, clientName("reader"))
				rdb = env.newClient(names[i])
				c := &waitCounter{}
				rdb.AddHook(c)
				counters = append(counters, c)
			}
			wg.Go(func() {
				r, err := redislock.New(rdb).RWMutex(name).RLock(ctx, time.Minute, waitOpt())
				results <- rwGot{r: r, err: err}
				if err != nil {
					return
				}
				<-leave
				if err := r.Release(ctx); err != nil {
					t.Errorf("reader %d: Release: %v", i, err)
				}
			})
		}
		waitUntil(t, "the readers to register", func() bool { return zcard(env.admin, rwKeys(rw)[rwRQ]) == n })
		for _, nm := range names {
			waitUntil(t, "a reader to block", func() bool { return blocked(t, env.admin, nm) })
		}
		w2name := clientName("writer")
		w2c := env.newClient(w2name)
		w2counter := &waitCounter{}
		w2c.AddHook(w2counter)
		w2done := lockAsync(ctx, redislock.New(w2c).RWMutex(name), time.Minute, waitOpt())
		waitUntil(t, "the second writer to block", func() bool { return blocked(t, env.admin, w2name) })

		if err := w1.Release(ctx); err != nil {
			t.Fatalf("first writer's Release: %v", err)
		}
		for range n {
			if got := <-results; got.err != nil {
				t.Fatalf("reader behind the writer: %v", got.err)
			}
		}
		if got := liveReads(t, env.admin, rw); got != n {
			t.Errorf("%d read holds live at once, want %d", got, n)
		}
		for i, c := range counters {
			if _, _, _, grants := c.counts(); grants != 1 {
				t.Errorf("reader %d obtained its hold after %d wake-ups, want 1 (woken by the release)", i, grants)
			}
		}
		if mustExist(t, env.admin, rw.WriterKey()) {
			t.Error("the writer key is set while the readers hold")
		}
		if _, err := rw.RLock(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("a new RLock while a writer waits: got %v, want ErrNotObtained", err)
		}
		close(leave)
		wg.Wait()
		got := <-w2done
		if got.err != nil {
			t.Fatalf("second writer: %v", got.err)
		}
		if _, _, _, grants := w2counter.counts(); grants != 1 {
			t.Errorf("second writer obtained with %d grants, want 1 (handed over by the last reader)", grants)
		}
		if err := got.w.Release(ctx); err != nil {
			t.Errorf("second writer's Release: %v", err)
		}
		checkNoKeyForever(t, env.admin)
	})
}

// Writers that wait with WaitForRelease take the lock in the order they
// came, on clients of their own or sharing one; each is woken once.
func TestRWMutexWaitWritersInOrder(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		for _, shared := range []bool{false, true} {
			// In the order they came, whether their blocks ended and began
			// again meanwhile or not.
			if order := rwWritersInOrder(t, env, shared); !slices.Equal(order, []int{0, 1, 2, 3}) {
				t.Errorf("shared client %t: writers obtained the lock in the order %v, want [0 1 2 3]", shared, order)
			}
		}
	})
}

// rwWritersInOrder starts four writers, one after the other, behind a read
// hold, releases it, and returns the order in which they obtained the
// lock. Writers on clients of their own that blocked once each were woken
// once, by the one before them (no herd).
func rwWritersInOrder(t *testing.T, env *waitEnv, shared bool) (order []int) {
	ctx := context.Background()
	name := redistest.Key(t, fmt.Sprintf("rw-%t-%d", shared, clientSeq.Add(1)))
	rw := redislock.New(env.admin).RWMutex(name)
	loadScripts(t, rw)
	r, err := rw.RLock(ctx, time.Minute, nil)
	if err != nil {
		t.Fatalf("RLock: %v", err)
	}
	var (
		mu         sync.Mutex
		wg         sync.WaitGroup
		sharedName = clientName("shared")
		one        = env.newClient(sharedName)
		counters   []*waitCounter
	)
	for i := range 4 {
		cname := clientName("writer")
		rdb := one
		if !shared {
			rdb = env.newClient(cname)
		}
		c := &waitCounter{}
		if !shared {
			rdb.AddHook(c)
			counters = append(counters, c)
		}
		wg.Go(func() {
			w, err := redislock.New(rdb).RWMutex(name).Lock(ctx, time.Minute, waitOpt())
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if err := w.Release(ctx); err != nil {
				t.Errorf("writer %d: Release: %v", i, err)
			}
		})
		waitUntil(t, fmt.Sprintf("writer %d to register", i), func() bool { return zcard(env.admin, rwKeys(rw)[rwWQ]) == int64(i+1) })
		switch {
		case !shared:
			waitUntil(t, fmt.Sprintf("writer %d to block", i), func() bool { return blocked(t, env.admin, cname) })
		case i == 0:
			// The first of the client's waits to be ready to block leads
			// them (CI once saw writer 1 get there first, and the lock,
			// when writer 1 started right after writer 0 registered).
			waitUntil(t, "writer 0 to block for the shared client", func() bool { return blocked(t, env.admin, sharedName) })
		}
	}
	if err := r.Release(ctx); err != nil {
		t.Fatalf("Release of the read hold: %v", err)
	}
	wg.Wait()
	for i, c := range counters {
		evals, _, timeouts, grants := c.counts()
		if c.sent() != 1 || timeouts > 0 {
			// Its block ended before its turn (a loaded machine): it
			// blocked again, or took what was handed to it meanwhile with
			// the attempt after the block.
			continue
		}
		// Its failed attempt, the one after its block, its release.
		if grants != 1 || evals != 3 {
			t.Errorf("writer %d sent %d scripts and obtained with %d grants; want 3 and 1", i, evals, grants)
		}
	}
	return order
}

// Writer preference with WaitForRelease: 8 readers keep taking read holds
// (each takes its next before releasing the last, so that without writer
// preference some hold is always live), and a ninth has crashed with its
// hold; a writer that starts waiting gets in within 2 read TTLs: once the
// readers' holds have ended and the crashed one's expiry, forced on the
// server, is past.
func TestRWMutexWaitWriterPreference(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		name := redistest.Key(t, "rw")
		rw := redislock.New(env.admin).RWMutex(name)
		const readTTL = 2 * time.Second
		crashed, err := rw.RLock(ctx, readTTL, nil)
		if err != nil {
			t.Fatalf("RLock of the crashed reader: %v", err)
		}
		readers := redislock.New(env.newClient(clientName("readers"))).RWMutex(name)
		var wg sync.WaitGroup
		var reads atomic.Int64
		for range 8 {
			wg.Go(func() {
				var r *redislock.ReadLock
				for ctx.Err() == nil {
					next, err := readers.RLock(ctx, readTTL, nil)
					if err != nil {
						_ = r.Release(context.Background())
						next, err = readers.RLock(ctx, readTTL, waitOpt())
					} else {
						_ = r.Release(context.Background())
					}
					if err != nil {
						r = nil
						continue
					}
					r = next
					reads.Add(1)
				}
				_ = r.Release(context.Background())
			})
		}
		waitUntil(t, "16 reads", func() bool { return reads.Load() >= 16 })
		start := time.Now()
		wctx, wcancel := context.WithTimeout(context.Background(), 2*readTTL)
		defer wcancel()
		done := lockAsync(wctx, redislock.New(env.newClient(clientName("writer"))).RWMutex(name), time.Minute, waitOpt())
		// The live readers leave; the crashed one's hold is left, until its
		// expiry is forced.
		waitUntil(t, "the readers to leave", func() bool {
			return zcard(env.admin, rwKeys(rw)[rwWQ]) == 1 && liveReads(t, env.admin, rw) == 1
		})
		expireRead(t, env.admin, rw, crashed.Token())
		got := <-done
		waited := time.Since(start)
		if got.err != nil {
			t.Fatalf("Lock behind 8 readers: %v after %v", got.err, waited)
		}
		if n := liveReads(t, env.admin, rw); n != 0 {
			t.Errorf("%d read holds live while the writer holds", n)
		}
		t.Logf("writer waited %v behind 8 re-acquiring readers and a crashed one (%d reads before)", waited, reads.Load())
		_ = got.w.Release(context.Background())
		cancel()
		wg.Wait()
	})
}

// Readers are not starved by writers that wait with WaitForRelease in
// turn: a reader gets in after the writer it waited behind, at most two
// writes after it registered (the writer holding, or the one the lock was
// reserved for, and one counted late).
func TestRWMutexWaitReadersNotStarved(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		name := redistest.Key(t, "rw")
		writers := redislock.New(env.newClient(clientName("writers"))).RWMutex(name)
		var wg sync.WaitGroup
		var writes atomic.Int64
		for range 4 {
			wg.Go(func() {
				for ctx.Err() == nil {
					w, err := writers.Lock(ctx, 10*time.Second, waitOpt())
					if err != nil {
						continue
					}
					writes.Add(1)
					_ = w.Release(context.Background())
				}
			})
		}
		waitUntil(t, "8 writes", func() bool { return writes.Load() >= 8 })
		rdb := env.newClient(clientName("reader"))
		// The writes counted when the reader's first attempt came back:
		// it registered then, unless it entered at once.
		var registeredAt atomic.Int64
		rdb.AddHook(&afterScript{fn: func() { registeredAt.CompareAndSwap(-1, writes.Load()) }})
		rw := redislock.New(rdb).RWMutex(name)
		for i := range 3 {
			registeredAt.Store(-1)
			rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
			r, err := rw.RLock(rctx, time.Minute, waitOpt())
			rcancel()
			if err != nil {
				t.Fatalf("RLock %d among 4 writers: %v", i, err)
			}
			if n := writes.Load() - registeredAt.Load(); n > 2 {
				t.Errorf("reader %d waited for %d writes after it registered, want at most 2", i, n)
			}
			_ = r.Release(context.Background())
		}
		cancel()
		wg.Wait()
	})
}

// afterScript is a go-redis hook that calls fn after each script call
// sent on its own (not in a pipeline).
type afterScript struct{ fn func() }

func (a *afterScript) DialHook(next redis.DialHook) redis.DialHook { return next }

func (a *afterScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			a.fn()
		}
		return err
	}
}

func (a *afterScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// rwCrashWaiter starts a waiter (a writer when write is true) with
// WaitForRelease on a client of its own, and once it blocks, closes that
// client: to Redis, a waiter whose process died, registered. It returns
// when the waiter's call has returned.
func rwCrashWaiter(t *testing.T, env *waitEnv, name string, write bool) {
	t.Helper()
	cname := clientName("crash")
	rdb := env.newClient(cname)
	ctx, cancel := context.WithCancel(context.Background())
	var done <-chan rwGot
	if write {
		done = lockAsync(ctx, redislock.New(rdb).RWMutex(name), time.Minute, waitOpt())
	} else {
		done = rlockAsync(ctx, redislock.New(rdb).RWMutex(name), time.Minute, waitOpt())
	}
	waitUntil(t, "the waiter to block", func() bool { return blocked(t, env.admin, cname) })
	_ = rdb.Close()
	cancel()
	if got := <-done; got.err == nil {
		t.Fatal("the crashed waiter obtained the lock")
	}
}

// A waiter that died costs the other side little: a dead writer holds new
// readers back until a release hands it the lock, which then stays
// reserved for its claim window (500 ms) with no taker; a dead reader,
// admitted when the writer it waited behind leaves, holds the next writer
// back for its claim window at most (forced here).
func TestRWMutexWaitCrashedWaiter(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		t.Run("writer", func(t *testing.T) {
			name := redistest.Key(t, "rw")
			rw := redislock.New(env.admin).RWMutex(name)
			r, err := rw.RLock(ctx, time.Minute, nil)
			if err != nil {
				t.Fatalf("RLock: %v", err)
			}
			rwCrashWaiter(t, env, name, true)
			if _, err := rw.RLock(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
				t.Errorf("RLock while the dead writer is registered: got %v, want ErrNotObtained", err)
			}
			if err := r.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			// Handed the lock: its registration is marked, and the writer
			// key is reserved for its claim window (which may be over
			// already).
			if z := env.admin.ZRangeWithScores(ctx, rwKeys(rw)[rwWA], 0, -1).Val(); len(z) != 1 || z[0].Score >= 0 {
				t.Errorf("writers' liveness after the last reader's release = %v, want the dead writer, marked", z)
			}
			if d := env.admin.PTTL(ctx, rw.WriterKey()).Val(); d > 500*time.Millisecond || d == -time.Nanosecond {
				t.Errorf("the dead writer's reservation lasts %v, want its claim window (500ms) at most", d)
			}
			// Well before the dead writer's registration would lapse (3 s).
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			r2, err := redislock.New(env.newClient(clientName("reader"))).RWMutex(name).RLock(rctx, time.Minute, waitOpt())
			if err != nil {
				t.Fatalf("RLock after the dead writer's reservation: %v", err)
			}
			_ = r2.Release(ctx)
			w, err := rw.Lock(rctx, time.Minute, waitOpt())
			if err != nil {
				t.Fatalf("Lock after the dead writer: %v", err)
			}
			_ = w.Release(ctx)
			checkNoKeyForever(t, env.admin)
		})
		t.Run("reader", func(t *testing.T) {
			name := redistest.Key(t, "rw")
			rw := redislock.New(env.admin).RWMutex(name)
			w1, err := rw.Lock(ctx, time.Minute, nil)
			if err != nil {
				t.Fatalf("Lock: %v", err)
			}
			rwCrashWaiter(t, env, name, false)
			w2name := clientName("writer")
			done := lockAsync(ctx, redislock.New(env.newClient(w2name)).RWMutex(name), time.Minute, waitOpt())
			waitUntil(t, "the second writer to block", func() bool { return blocked(t, env.admin, w2name) })
			before := serverMillis(t, env.admin, rw.WriterKey())
			if err := w1.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			rq := rwKeys(rw)[rwRQ]
			z, err := env.admin.ZRangeWithScores(ctx, rq, 0, -1).Result()
			if err != nil || len(z) != 1 {
				t.Fatalf("reader queue = %v, %v; want the dead reader alone", z, err)
			}
			if s := int64(z[0].Score); s >= 0 || -s > before+500+1000 {
				t.Errorf("the dead reader's admission %d lapses after %d, the end of its claim window", s, before+500)
			}
			if mustExist(t, env.admin, rw.WriterKey()) {
				t.Error("the writer key is set while an admitted reader is still to enter")
			}
			// Its registration lapses.
			if err := env.admin.ZAddXX(ctx, rq, redis.Z{Score: float64(-serverMillis(t, env.admin, rq)), Member: z[0].Member}).Err(); err != nil {
				t.Fatal(err)
			}
			got := <-done
			if got.err != nil {
				t.Fatalf("second writer: %v", got.err)
			}
			_ = got.w.Release(ctx)
			checkNoKeyForever(t, env.admin)
		})
	})
}

// A waiter that gives up takes its registration back, and lets in whom it
// held up: readers behind a writer that stops waiting enter at once.
func TestRWMutexWaitGiveUp(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		name := redistest.Key(t, "rw")
		rw := redislock.New(env.admin).RWMutex(name)
		r, err := rw.RLock(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("RLock: %v", err)
		}
		wctx, cancel := context.WithCancel(ctx)
		wname := clientName("writer")
		wdone := lockAsync(wctx, redislock.New(env.newClient(wname)).RWMutex(name), time.Minute, waitOpt())
		waitUntil(t, "the writer to block", func() bool { return blocked(t, env.admin, wname) })
		rname := clientName("reader")
		rdone := rlockAsync(ctx, redislock.New(env.newClient(rname)).RWMutex(name), time.Minute, waitOpt())
		waitUntil(t, "the reader to block", func() bool { return blocked(t, env.admin, rname) })
		cancel()
		if got := <-wdone; !errors.Is(got.err, redislock.ErrNotObtained) || !errors.Is(got.err, context.Canceled) {
			t.Errorf("Lock cancelled: got %v, want ErrNotObtained and context.Canceled", got.err)
		}
		got := <-rdone
		if got.err != nil {
			t.Fatalf("reader behind a writer that gave up: %v", got.err)
		}
		if n := zcard(env.admin, rwKeys(rw)[rwWQ]); n != 0 {
			t.Errorf("%d writer registrations left after the writer gave up", n)
		}
		_ = got.r.Release(ctx)
		_ = r.Release(ctx)
		checkNoKeyForever(t, env.admin)
	})
}

// A client that is only a redis.Scripter cannot block: WaitForRelease
// then polls with its fallback, registered as a polling waiter is.
func TestRWMutexWaitScripterOnly(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		name := redistest.Key(t, "rw")
		rw := redislock.New(env.admin).RWMutex(name)
		r, err := rw.RLock(ctx, time.Minute, nil)
		if err != nil {
			t.Fatalf("RLock: %v", err)
		}
		poll := &redislock.Options{RetryStrategy: redislock.WaitForRelease(redislock.LinearBackoff(2 * time.Millisecond))}
		done := lockAsync(ctx, redislock.New(newFaultyClient(env.admin)).RWMutex(name), time.Minute, poll)
		waitMembers(t, env.admin, rwKeys(rw)[rwQ])
		if _, err := rw.RLock(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("RLock while a polling writer waits: got %v, want ErrNotObtained", err)
		}
		if err := r.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		got := <-done
		if got.err != nil {
			t.Fatalf("Lock through a Scripter: %v", got.err)
		}
		_ = got.w.Release(ctx)
		if n := zcard(env.admin, rwKeys(rw)[rwQ]); n != 0 {
			t.Errorf("%d polling writer registrations left", n)
		}
		checkNoKeyForever(t, env.admin)
	})
}

// Issue 32 item 2: a waiter that polls (any strategy but WaitForRelease
// and NoRetry) registers for as long as a waiter of WaitForRelease does,
// the registration's life (3 s), renewed by each attempt, whatever its
// TTL: one that dies holds the other side back no longer than that.
// Before, it registered for its TTL (12 s here: every reader kept out for
// 12 s after a polling writer died).
func TestRWMutexPollingRegistrationLapses(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		for _, writer := range []bool{true, false} {
			name := redistest.Key(t, "rw")
			rw := redislock.New(rdb).RWMutex(name)
			// What keeps the waiter out: a read hold for a writer, the
			// write lock for a reader.
			queue, keep := rwKeys(rw)[rwQ], func() (func(context.Context) error, error) {
				r, err := rw.RLock(ctx, time.Minute, nil)
				return r.Release, err
			}
			if !writer {
				queue, keep = rwKeys(rw)[rwRQ], func() (func(context.Context) error, error) {
					w, err := rw.Lock(ctx, time.Minute, nil)
					return w.Release, err
				}
			}
			release, err := keep()
			if err != nil {
				t.Fatal(err)
			}
			// A poller that sleeps a second between attempts, given up
			// after its first: its registration is read meanwhile.
			before := serverMillis(t, rdb, rw.WriterKey())
			done := make(chan error, 1)
			go func() {
				c, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
				defer cancel()
				slow := &redislock.Options{RetryStrategy: redislock.LinearBackoff(time.Second)}
				var err error
				if writer {
					_, err = rw.Lock(c, 12*time.Second, slow)
				} else {
					_, err = rw.RLock(c, 12*time.Second, slow)
				}
				done <- err
			}()
			waitUntil(t, "the poller to register", func() bool { return zcard(rdb, queue) == 1 })
			z := rdb.ZRangeWithScores(ctx, queue, 0, -1).Val()
			if len(z) != 1 {
				t.Fatalf("writer %t: registrations %v, want the poller's", writer, z)
			}
			lapse := int64(z[0].Score)
			if lapse < 0 {
				lapse = -lapse
			}
			if lapse > before+3000+1000 {
				t.Errorf("writer %t: a polling waiter's registration lapses %d ms after the server's time before its attempt, want the registration's life (3000 ms), not its TTL (12000 ms)", writer, lapse-before)
			}
			if err := <-done; !errors.Is(err, redislock.ErrNotObtained) {
				t.Errorf("writer %t: the poller: %v, want ErrNotObtained", writer, err)
			}
			if err := release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
}
